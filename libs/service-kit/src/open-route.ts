import express from 'express';
import { SetMetadata } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';

/**
 * Metadata naming a route (or a whole controller) that answers without sign-in. A service that
 * authenticates its routes with a guard denies by default and reads this to let the marked ones
 * through; health and metrics carry it, so probes and scrapers need no credentials on any service.
 */
export const OPEN_ROUTE = 'conveyor:open-route';
export const OpenRoute = () => SetMetadata(OPEN_ROUTE, true);

/**
 * The Express application every service serves on. Routing is case-sensitive and strict: a path
 * matches a route only as it is written (`/API/v1/x` and `/api/v1/x/` are not `/api/v1/x`), so
 * whatever decides about a request (a guard, a mount, a proxy's rule) sees the one spelling the route
 * has. Express reads both settings when its router is first made, and Nest's adapter adds a
 * middleware (making the router) as it is constructed, so they are set on the application first.
 */
export function strictExpressAdapter(): ExpressAdapter {
  const app = express();
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  return new ExpressAdapter(app);
}
