import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'server',
    include: ['test/**/*.test.ts'],
    // dist/ for the tests that start the real server process.
    globalSetup: ['test/global-setup.ts'],
    // Interop tests start real servers and clients.
    testTimeout: 20_000,
  },
});
