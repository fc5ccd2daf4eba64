import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The server (apps/server) serves the built console and the API on one port; in development Vite
// serves the console and forwards the API and the .asmx endpoints (help pages, WSDL) to it.
const server = 'http://localhost:3000';

// The console is served with a Content-Security-Policy without 'unsafe-eval'. Zod compiles object
// parsers with `new Function` unless `jitless`, and probes for it as each schema is built, at
// import: Chromium reports that probe as a CSP violation even though zod catches its error. Zod
// takes its settings from `globalThis.__zod_globalConfig` when it loads, so the chunk holding zod's
// core sets `jitless` there first, before any schema exists. (A `z.config()` call in main.tsx runs
// too late: the chunk with zod and the contract's schemas is evaluated before the entry's code.)
const ZOD_CORE = /[\\/]zod[\\/]v4[\\/]core[\\/]core\.js$/;
const ZOD_JITLESS = 'globalThis.__zod_globalConfig={...globalThis.__zod_globalConfig,jitless:true};';

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // bench/bundle-size.mjs reads the manifest to find what the first load of /send fetches.
    manifest: true,
    sourcemap: true,
    rolldownOptions: {
      output: {
        banner: (chunk) => (chunk.moduleIds.some((id) => ZOD_CORE.test(id)) ? ZOD_JITLESS : ''),
      },
    },
  },
  server: {
    proxy: {
      '/api': { target: server },
      '^/[^/?]+\\.asmx': { target: server },
    },
  },
});
