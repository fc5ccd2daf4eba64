import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'server',
    include: ['test/**/*.test.ts'],
    // Interop tests start real servers and clients.
    testTimeout: 20_000,
  },
});
