// Builds the console into web/, which the admin service serves as static files. Relative asset URLs
// (base './') let the same build sit at any path; the app routes with the URL fragment, so the server
// needs no history fallback. Everything is bundled: the console loads nothing from another origin.
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: 'web',
    emptyOutDir: true,
    sourcemap: true,
    chunkSizeWarningLimit: 1024,
  },
});
