import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The server (apps/server) serves the built console and the API on one port; in development Vite
// serves the console and forwards the API and the .asmx endpoints (help pages, WSDL) to it.
const server = 'http://localhost:3000';

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // bench/bundle-size.mjs reads the manifest to find what the first load of /send fetches.
    manifest: true,
    sourcemap: true,
  },
  server: {
    proxy: {
      '/api': { target: server },
      '^/[^/?]+\\.asmx': { target: server },
    },
  },
});
