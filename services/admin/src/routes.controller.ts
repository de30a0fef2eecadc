// The live route table: every route and mount the service's HTTP router holds, read from the router
// itself (not from a list), each with the access the guard enforces on it. Whatever is registered is
// listed, by Nest or by anything else (the OpenAPI document, the console's files), so a route that
// escapes the guard shows up here as `unguarded`.
import { Controller, Get, RequestMethod } from '@nestjs/common';
import { PATH_METADATA, METHOD_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, HttpAdapterHost, MetadataScanner, Reflector } from '@nestjs/core';
import type { AdminApi } from '@conveyor/contracts';
import { RequireRole, routeAccess, type RouteAccess } from './http.js';

/** The parts of an Express 5 router layer read here. */
interface RouterLayer {
  name?: string;
  rawPath?: unknown;
  route?: { path: unknown; methods: Record<string, boolean> };
}

const joinPath = (...parts: string[]) => `/${parts.map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/')}`;
const asList = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : v === undefined ? [''] : [String(v)]);

@Controller('api/v1/routes')
@RequireRole('admin')
export class RoutesController {
  private access: Map<string, RouteAccess> | undefined;

  constructor(
    private readonly adapter: HttpAdapterHost,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  @Get()
  list(): AdminApi.RouteTable {
    const access = (this.access ??= this.nestRoutes());
    const router = (this.adapter.httpAdapter.getInstance() as { router: { stack: RouterLayer[] } }).router;
    const items: AdminApi.RouteEntry[] = [];
    for (const layer of router.stack) {
      if (layer.route) {
        const methods = Object.keys(layer.route.methods).map((m) => (m === '_all' ? 'ALL' : m.toUpperCase()));
        for (const path of asList(layer.route.path)) {
          for (const method of methods) {
            const known = access.get(`${method} ${path}`);
            items.push({ method, path, access: known?.access ?? 'unguarded', sessionOnly: known?.sessionOnly ?? false });
          }
        }
      } else {
        for (const path of asList(layer.rawPath)) items.push({ method: 'USE', path: path || '/', access: 'unguarded', sessionOnly: false });
      }
    }
    return { items };
  }

  /** `METHOD /path` → access, for every handler of every controller, as Nest registers them. */
  private nestRoutes(): Map<string, RouteAccess> {
    const out = new Map<string, RouteAccess>();
    for (const wrapper of this.discovery.getControllers()) {
      const { instance, metatype } = wrapper;
      if (!instance || !metatype) continue;
      const prototype = Object.getPrototypeOf(instance) as object;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = Reflect.get(prototype, name) as Function;
        const requestMethod: RequestMethod | undefined = Reflect.getMetadata(METHOD_METADATA, handler);
        if (requestMethod === undefined || !Reflect.hasMetadata(PATH_METADATA, handler)) continue;
        const method = RequestMethod[requestMethod];
        for (const base of asList(Reflect.getMetadata(PATH_METADATA, metatype))) {
          for (const path of asList(Reflect.getMetadata(PATH_METADATA, handler))) {
            out.set(`${method} ${joinPath(base, path)}`, routeAccess(this.reflector, [handler, metatype as Function], method));
          }
        }
      }
    }
    return out;
  }
}
