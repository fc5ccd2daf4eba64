import { defineConfig } from 'vitest/config';

// One runner for the whole workspace: each package and app is a project with its own config.
export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'e2e'],
  },
});
