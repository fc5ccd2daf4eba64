import '@testing-library/jest-dom/vitest';
import { cleanup, configure } from '@testing-library/react';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { server } from './server';

// jsdom lacks matchMedia, which uPlot reads when it loads.
if (!window.matchMedia) {
  window.matchMedia = (query: string) =>
    ({
      matches: false,
      media: query,
      onchange: null,
      addListener: () => {},
      removeListener: () => {},
      addEventListener: () => {},
      removeEventListener: () => {},
      dispatchEvent: () => false,
    }) as MediaQueryList;
}

// A page's code is a lazy chunk, loaded by the first test that opens it: on a machine busy with
// other work (CI runs every project at once) that first load can take more than findBy's default
// second. Waiting longer changes nothing for a test that passes, and fails the same otherwise.
configure({ asyncUtilTimeout: 4000 });

// jsdom has no canvas: say so quietly (uPlot charts then show their text summary only).
HTMLCanvasElement.prototype.getContext = () => null;

beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => {
  cleanup();
  // A form's draft (lib/draft.ts) is the tab's: each test starts with a fresh tab.
  sessionStorage.clear();
  server.resetHandlers();
  server.events.removeAllListeners();
});
afterAll(() => server.close());
