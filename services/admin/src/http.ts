// The HTTP edge of the admin API: who is calling (cookie or bearer token), what role a route needs,
// how inputs are validated, and how every error becomes an AdminError body naming the field.
import { Catch, HttpException, Inject, Injectable, SetMetadata, type PipeTransform, createParamDecorator, type ArgumentsHost, type CanActivate, type ExceptionFilter, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import express, { type Request, type Response } from 'express';
import type { z } from 'zod';
import { AdminApi, storableText } from '@conveyor/contracts';
import { AdminApiError, allows, validationError, type AuthStore, type Principal, type Role } from '@conveyor/admin';
import { INFRA, OPEN_ROUTE, OpenRoute, type Infra } from '@conveyor/service-kit';
import { currentTraceId } from '@conveyor/telemetry';
import { ADMIN_SETTINGS, type AdminSettings } from './settings.js';

export const AUTH_STORE = Symbol('AuthStore');
const REQUIRED_ROLE = 'conveyor:admin:role';
const SESSION_ONLY = 'conveyor:admin:session-only';
const API_PATH = '/api/';

/**
 * No sign-in needed (status, setup, login; health and metrics are marked so in the service kit). Every
 * other route needs a session or a token: the guard denies whatever is not marked.
 */
export const Public = OpenRoute;
/** The role a route needs; default: `viewer` for GET, `admin` for everything else. */
export const RequireRole = (role: Role) => SetMetadata(REQUIRED_ROLE, role);
/** Only a signed-in user, never an API token, may call the route (tokens cannot mint tokens). */
export const RequireSession = () => SetMetadata(SESSION_ONLY, true);

/** What a route needs: nothing (public), or a role, and whether a token will do. */
export interface RouteAccess {
  access: 'public' | Role;
  sessionOnly: boolean;
}

/**
 * A route's access from its handler's and controller's metadata and its HTTP method. The guard and the
 * route table (GET /routes) both read it here, so the table says what the guard enforces.
 */
export function routeAccess(reflector: Reflector, targets: [Function, Function], method: string): RouteAccess {
  const sessionOnly = reflector.getAllAndOverride<boolean | undefined>(SESSION_ONLY, targets) ?? false;
  if (reflector.getAllAndOverride<boolean | undefined>(OPEN_ROUTE, targets)) return { access: 'public', sessionOnly: false };
  const role = reflector.getAllAndOverride<Role | undefined>(REQUIRED_ROLE, targets) ?? (method === 'GET' || method === 'HEAD' ? 'viewer' : 'admin');
  return { access: role, sessionOnly };
}

/** The caller of each authenticated request. A WeakMap, so a request object needs no extra fields. */
const principals = new WeakMap<Request, Principal>();

/** The authenticated caller, in a handler of a non-public route. */
export const Caller = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  const principal = principals.get(ctx.switchToHttp().getRequest<Request>());
  if (!principal) throw new AdminApiError('unauthenticated', 'header.authorization: sign in first', { field: 'header.authorization' });
  return principal;
});

/** The session cookie's value from a Cookie header, if any. */
export function sessionCookie(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === AdminApi.ADMIN_SESSION_COOKIE) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

/** `Authorization: Bearer <token>` → the token. */
export function bearer(header: string | undefined): string | undefined {
  return /^bearer +(\S+) *$/i.exec(header ?? '')?.[1];
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a write authenticated by the session cookie looks cross-site, or undefined when it does not.
 * The browser tells: `Sec-Fetch-Site` where it sends it (same-origin, or none for a typed address),
 * else `Origin`, which must be this server's own (as the request reached it) or the public URL's.
 * A request with neither comes from no browser (a script holding the cookie) and is let through:
 * forging one needs the cookie itself. SameSite=Lax alone would let a sibling subdomain write.
 */
export function crossSiteWrite(req: Pick<Request, 'method' | 'protocol' | 'headers'> & { get(name: string): string | undefined }, publicUrl: string): string | undefined {
  if (SAFE_METHODS.has(req.method)) return undefined;
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none' ? undefined : `header.sec-fetch-site: a ${site} request cannot use the session cookie`;
  const origin = req.headers.origin;
  if (typeof origin !== 'string') return undefined;
  const own = [`${req.protocol}://${req.get('host') ?? ''}`, new URL(publicUrl).origin];
  return own.includes(origin) ? undefined : `header.origin: a request from ${origin} cannot use the session cookie of ${own[1]}`;
}

@Injectable()
export class AdminAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(AUTH_STORE) private readonly auth: Pick<AuthStore, 'authenticateToken' | 'authenticateSession'>,
    @Inject(INFRA) private readonly infra: { logger: { warn(obj: object, msg: string): void } },
    @Inject(ADMIN_SETTINGS) private readonly settings: Pick<AdminSettings, 'publicUrl'>,
  ) {}

  /**
   * Decided by the route the router matched (its handler's metadata), never by the request's path:
   * a route not marked public needs a valid session or token, whatever the path looks like.
   */
  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<Request>();
    const { access, sessionOnly } = routeAccess(this.reflector, [ctx.getHandler(), ctx.getClass()], req.method);
    if (access === 'public') return true;
    const token = bearer(req.headers.authorization);
    const session = sessionCookie(req.headers.cookie);
    const principal = token ? await this.auth.authenticateToken(token) : session ? await this.auth.authenticateSession(session) : null;
    // Logged without the token or cookie: the method, path, what was presented and the address.
    const where = { method: req.method, path: req.path, ip: req.ip, traceId: currentTraceId() };
    if (!principal) {
      this.infra.logger.warn({ ...where, presented: token ? 'bearer' : session ? 'session' : 'nothing' }, 'admin API: unauthenticated request refused');
      const field = token ? 'header.authorization' : session ? `cookie.${AdminApi.ADMIN_SESSION_COOKIE}` : 'header.authorization';
      throw new AdminApiError('unauthenticated', token || session ? `${field}: the session or token is not valid (expired, revoked or unknown); sign in again` : `${field}: sign in (session cookie) or send Authorization: Bearer <API token>`, { field });
    }
    const field = principal.via === 'token' ? 'header.authorization' : `cookie.${AdminApi.ADMIN_SESSION_COOKIE}`;
    if (!allows(principal.role, access)) {
      this.infra.logger.warn({ ...where, actor: principal.actor, role: principal.role, required: access }, 'admin API: request refused for the role');
      throw new AdminApiError('forbidden', `${field}: this needs the ${access} role; ${principal.via === 'token' ? 'the token' : principal.username} has ${principal.role}`, { field });
    }
    const crossSite = principal.via === 'session' ? crossSiteWrite(req, this.settings.publicUrl) : undefined;
    if (crossSite) {
      this.infra.logger.warn({ ...where, actor: principal.actor, origin: req.headers.origin, fetchSite: req.headers['sec-fetch-site'] }, 'admin API: cross-site write refused');
      throw new AdminApiError('forbidden', `${crossSite}; the console sends it from its own origin, scripts use an API token`, { field: crossSite.slice(0, crossSite.indexOf(':')) });
    }
    if (sessionOnly && principal.via !== 'session') {
      this.infra.logger.warn({ ...where, actor: principal.actor }, 'admin API: a token asked for a sign-in-only route');
      throw new AdminApiError('forbidden', `${field}: an API token cannot do this; sign in as a user`, { field });
    }
    principals.set(req, principal);
    return true;
  }
}

/** Every failure as an AdminError body: our own errors as they are, Nest's by status, anything else 500 (logged). */
@Catch()
export class AdminErrorFilter implements ExceptionFilter {
  constructor(@Inject(INFRA) private readonly infra: Infra) {}

  catch(err: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const req = host.switchToHttp().getRequest<Request>();
    // The route the router matched, as it was registered (not as the request spelled it): health and
    // metrics answer as on every other service; API routes, and requests no route matched, as AdminError.
    const route: unknown = (req.route as { path?: unknown } | undefined)?.path;
    if (typeof route === 'string' && !route.startsWith(API_PATH) && err instanceof HttpException) {
      res.status(err.getStatus()).json(err.getResponse());
      return;
    }
    const body = this.toBody(err, req);
    if (body.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(body.retryAfterSeconds));
    res.status(body.statusCode).json(body);
  }

  private toBody(err: unknown, req: Request): AdminApi.AdminError {
    if (err instanceof AdminApiError) return err.toBody();
    if (err instanceof HttpException) {
      const status = err.getStatus();
      if (status === 404) return { statusCode: 404, code: 'not_found', message: `no route ${req.method} ${req.path}`, field: 'path' };
      // Body parsing (malformed JSON, too large) fails before any handler.
      if (status === 400 || status === 413) return { statusCode: status, code: 'validation_failed', message: `body: ${err.message}`, field: 'body' };
      return { statusCode: status, code: status >= 500 ? 'internal' : 'validation_failed', message: err.message };
    }
    const typed = typeof err === 'object' && err !== null && 'type' in err ? String(Reflect.get(err, 'type')) : '';
    if (typed === 'entity.parse.failed') return { statusCode: 400, code: 'validation_failed', message: 'body: is not valid JSON', field: 'body' };
    if (typed === 'entity.too.large') return { statusCode: 413, code: 'validation_failed', message: 'body: is too large', field: 'body' };
    this.infra.logger.error({ err, method: req.method, path: req.path, traceId: currentTraceId() }, 'admin API: request failed');
    return { statusCode: 500, code: 'internal', message: 'internal error; the log has the details' };
  }
}

/** Parses `value` with `schema`, or throws a 400 naming every offending field under `where`. */
export function parse<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query'): z.output<S> {
  const result = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  if (!result.success) throw validationError(where, result.error.issues);
  return result.data;
}

/**
 * A request's body as bytes, for a route that takes a file as its body (a skill's zip). Read by the
 * handler, so only after the guard let the caller through, and only up to `limit` bytes (past it: the
 * same 413 a JSON body too large gets). The content type must be one of `types`; a JSON body (already
 * read by the JSON parser) is not one of them.
 */
export async function rawBody(req: Request, res: Response, types: readonly string[], limit: number): Promise<Buffer> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!types.includes(type)) {
    throw new AdminApiError('validation_failed', `header.content-type: send the body as ${types[0]}${type ? `, not ${type.slice(0, 100)}` : ''}`, { field: 'header.content-type' });
  }
  try {
    await new Promise<void>((resolve, reject) => express.raw({ type: () => true, limit })(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
  } catch (err) {
    const typed = typeof err === 'object' && err !== null && 'type' in err ? String(Reflect.get(err, 'type')) : '';
    // Too large: rethrown as it is, which the error filter answers 413 like any other oversized body.
    if (typed === 'entity.too.large') throw err;
    throw AdminApiError.invalid('body', `not read: ${(err as Error).message}`);
  }
  const body: unknown = req.body;
  return Buffer.isBuffer(body) ? body : Buffer.alloc(0);
}

/** A numeric path parameter. */
export function seqParam(value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw AdminApiError.invalid('path.seq', 'must be a positive integer');
  return Number(value);
}

/**
 * A path id: nothing Postgres cannot store (NUL, a lone surrogate) reaches a query, since no row has
 * such an id and asking would fail the statement.
 */
@Injectable()
export class StorableId implements PipeTransform<string, string> {
  transform(value: string): string {
    if (value.length > 500 || storableText(value) !== value) throw new AdminApiError('not_found', 'path.id: no such resource', { field: 'path.id' });
    return value;
  }
}

/**
 * What Node's HTTP parser refuses before any route sees the request (an oversized request line or
 * header block, a malformed request), answered as an AdminError body naming what was wrong, where
 * Node would answer with an empty 431 or 400. Listening to `clientError` replaces Node's own answer.
 */
export function answerClientError(err: Error & { code?: string }, socket: import('node:stream').Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const body = JSON.stringify(
    tooLarge
      ? { statusCode: 431, code: 'validation_failed', message: 'header: the request line and headers are over the server\'s limit', field: 'header' }
      : { statusCode: 400, code: 'validation_failed', message: 'request: not a well-formed HTTP request', field: 'request' },
  );
  socket.end(`HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
