import { Link } from 'react-router';
import type { Verdict } from '../utils/verdict';

/** The Dashboard's first answer: is everything fine in this period, and if not, where to look. */
export function VerdictPanel({ verdict }: { verdict: Verdict }) {
  return (
    <section
      className={`verdict ${verdict.ok ? 'verdict-ok' : 'verdict-attention'}`}
      aria-labelledby="verdict-heading"
    >
      <h2 id="verdict-heading" className="verdict-headline">
        {verdict.headline}
      </h2>
      <p className="verdict-detail">{verdict.detail}</p>
      {verdict.concerns.length > 0 ? (
        <ul className="verdict-concerns">
          {verdict.concerns.map((c) => (
            <li key={c.text}>
              {c.text} <Link to={c.href}>{c.link}</Link>
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
