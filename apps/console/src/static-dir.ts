import { fileURLToPath } from 'node:url';

/** The folder `vite build` fills with the console's files (index.html and assets/), for a server to serve. */
export const CONSOLE_STATIC_DIR = fileURLToPath(new URL('../web/', import.meta.url));
