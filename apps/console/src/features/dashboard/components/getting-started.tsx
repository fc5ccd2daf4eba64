import { Link } from 'react-router';
import { paths } from '../../../config/paths';

/** What an admin does first on a new console: no school is registered yet. */
export function GettingStarted() {
  return (
    <section className="card getting-started" aria-labelledby="getting-started-heading">
      <h2 id="getting-started-heading">Getting started</h2>
      <p>No school is registered yet. Three steps and the service is in use:</p>
      <ol>
        <li>
          <Link to={paths.schools.href()}>Register a school</Link>: the address its server sends, and the name
          its push topics take.
        </li>
        <li>
          <Link to={paths.books.href()}>Upload a book</Link> for a term and a class, for the apps to download.
        </li>
        <li>
          <Link to={paths.send.href('AuthCode')}>Send a test code</Link> to your own phone, and see it in
          History and Deliveries.
        </li>
      </ol>
    </section>
  );
}
