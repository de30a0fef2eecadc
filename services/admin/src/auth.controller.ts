import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AdminApi } from '@conveyor/contracts';
import { AdminApiError, clientAddress, LoginThrottle, type AuthStore, type Principal } from '@conveyor/admin';
import { INFRA, type Infra } from '@conveyor/service-kit';
import { AUTH_STORE, Caller, parse, Public, RequireRole, sessionCookie } from './http.js';
import { ADMIN_SETTINGS, type AdminSettings } from './settings.js';
import type { AdminEnv } from './env.js';

const me = (p: Principal): AdminApi.Me => ({ username: p.username, role: p.role, via: p.via });

@Controller('api/v1/auth')
export class AuthController {
  private readonly throttle: LoginThrottle;

  constructor(
    @Inject(AUTH_STORE) private readonly auth: AuthStore,
    @Inject(ADMIN_SETTINGS) private readonly settings: AdminSettings,
    @Inject(INFRA) private readonly infra: Infra & { env: AdminEnv },
  ) {
    const env = infra.env;
    this.throttle = new LoginThrottle(infra.redis, infra.topology.prefix, {
      perUser: env.ADMIN_LOGIN_ATTEMPTS_PER_USER,
      perAddress: env.ADMIN_LOGIN_ATTEMPTS_PER_ADDRESS,
      setup: env.ADMIN_SETUP_ATTEMPTS_PER_ADDRESS,
      windowMs: env.ADMIN_LOGIN_WINDOW_SECONDS * 1000,
    });
  }

  @Public()
  @Get('status')
  async status(): Promise<AdminApi.AuthStatus> {
    return { setupRequired: await this.auth.setupRequired() };
  }

  @Public()
  @Post('setup')
  @HttpCode(200)
  async setup(@Body() body: unknown, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<AdminApi.Me> {
    const input = parse(AdminApi.SetupRequest, body, 'body');
    await this.throttle.attemptSetup(clientAddress(req.ip));
    const { principal, session, expiresAt } = await this.auth.completeSetup(input);
    this.infra.logger.info({ username: principal.username }, 'admin API: first admin user created through the setup link');
    this.setCookie(req, res, session, expiresAt);
    return me(principal);
  }

  @Public()
  @Post('login')
  @HttpCode(200)
  async login(@Body() body: unknown, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<AdminApi.Me> {
    const input = parse(AdminApi.LoginRequest, body, 'body');
    const address = clientAddress(req.ip);
    await this.throttle.attemptLogin(input.username, address);
    const result = await this.auth.login(input.username, input.password);
    if (!result) {
      this.infra.logger.warn({ username: input.username, ip: req.ip }, 'admin API: sign-in refused');
      throw new AdminApiError('unauthenticated', 'body.password: wrong user name or password', { field: 'body.password' });
    }
    await this.throttle.succeeded(input.username, address);
    this.infra.logger.info({ username: input.username, ip: req.ip }, 'admin API: signed in');
    this.setCookie(req, res, result.session, result.expiresAt);
    return me(result.principal);
  }

  @RequireRole('viewer')
  @Post('logout')
  @HttpCode(204)
  async logout(@Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<void> {
    const session = sessionCookie(req.headers.cookie);
    if (session) await this.auth.logout(session);
    res.clearCookie(AdminApi.ADMIN_SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure: this.secureCookie(req) });
  }

  @Get('me')
  me(@Caller() caller: Principal): AdminApi.Me {
    return me(caller);
  }

  private setCookie(req: Request, res: Response, session: string, expiresAt: Date): void {
    res.cookie(AdminApi.ADMIN_SESSION_COOKIE, session, { httpOnly: true, sameSite: 'lax', secure: this.secureCookie(req), path: '/', expires: expiresAt });
  }

  private secureCookie(req: Request): boolean {
    return this.settings.cookieSecure === 'request' ? req.secure : this.settings.cookieSecure;
  }
}
