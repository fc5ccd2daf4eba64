import react from '@vitejs/plugin-react';
import { defineProject } from 'vitest/config';

export default defineProject({
  plugins: [react()],
  test: {
    name: 'console',
    environment: 'jsdom',
    include: ['src/**/*.test.{ts,tsx}'],
    setupFiles: ['./src/testing/setup.ts'],
    // A page driven through jsdom by user-event (tabbing through History's filters, say) took over
    // the default 5 s on a loaded machine of two cores.
    testTimeout: 15_000,
  },
});
