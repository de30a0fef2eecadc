// Builds the console into web/, which the admin service serves as static files. Relative asset URLs
// (base './') let the same build sit at any path; the app routes with the URL fragment, so the server
// needs no history fallback. Everything is bundled: the console loads nothing from another origin.
import { defineConfig } from 'vite';

// `npm run dev -w apps/console`: the dev server passes the API and the deployment settings through to
// an admin service (CONSOLE_DEV_ADMIN_URL, default the one `npm start` runs).
const admin = process.env.CONSOLE_DEV_ADMIN_URL ?? 'http://localhost:8084';

export default defineConfig({
  base: './',
  server: { proxy: { '/api': admin, '/console-config.json': admin } },
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: 'web',
    emptyOutDir: true,
    sourcemap: true,
    chunkSizeWarningLimit: 1024,
  },
});
