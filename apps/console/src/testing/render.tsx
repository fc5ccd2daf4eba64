import { render } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { type Location, MemoryRouter, useLocation } from 'react-router';
import { AppProvider } from '../app/provider';
import { AppRoutes } from '../app/router';
import { createQueryClient } from '../lib/react-query';

/**
 * Renders the whole console at `path`, as a person would open it, with a fresh cache. `location()`
 * tells where the router is (the address bar), e.g. to check filters went into the URL.
 */
export function renderApp(path: string) {
  let current: Location | undefined;
  function LocationProbe() {
    current = useLocation();
    return null;
  }
  const user = userEvent.setup();
  const view = render(
    <AppProvider queryClient={createQueryClient({ retry: false })}>
      <MemoryRouter initialEntries={[path]}>
        <AppRoutes />
        <LocationProbe />
      </MemoryRouter>
    </AppProvider>,
  );
  return {
    ...view,
    user,
    location: () => {
      if (!current) throw new Error('the router has not rendered');
      return current;
    },
  };
}
