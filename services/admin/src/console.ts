// The web console (apps/console, built by vite) as static files at the service's root, beside the API.
// Files only: every piece of data the console shows comes through the signed-in API.
import { existsSync } from 'node:fs';
import path from 'node:path';
import express from 'express';
import type { INestApplication } from '@nestjs/common';
import { CONSOLE_STATIC_DIR } from '@conveyor/console';
import type { Infra } from '@conveyor/service-kit';
import type { ConsoleEnv } from './console-env.js';

export function serveConsole(app: INestApplication, infra: Infra & { env: ConsoleEnv }): void {
  const index = path.join(CONSOLE_STATIC_DIR, 'index.html');
  if (!existsSync(index)) {
    infra.logger.warn({ dir: CONSOLE_STATIC_DIR }, 'the web console is not built (npm run build); the API still answers');
    return;
  }
  const config = JSON.stringify({ traceUrlTemplate: infra.env.CONSOLE_TRACE_URL_TEMPLATE });
  const security = (res: express.Response) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
  };
  app.use('/console-config.json', (_req: express.Request, res: express.Response) => {
    security(res);
    res.setHeader('Cache-Control', 'no-store');
    res.type('application/json').send(config);
  });
  // The one-time setup link the log prints (`/setup#token=…`) opens the console's setup form.
  app.use('/setup', (req: express.Request, res: express.Response, next: express.NextFunction) => {
    if (req.method !== 'GET' || req.path !== '/') return next();
    security(res);
    res.setHeader('Cache-Control', 'no-store');
    res.sendFile(index);
  });
  app.use(express.static(CONSOLE_STATIC_DIR, {
    index: 'index.html',
    // Hashed asset names may be cached for long; index.html never, so a new build is picked up.
    setHeaders: (res, file) => {
      security(res);
      res.setHeader('Cache-Control', file.endsWith('index.html') ? 'no-store' : 'public, max-age=31536000, immutable');
    },
  }));
}
