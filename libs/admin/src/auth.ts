// Users, console sessions, API tokens and the first-start setup. Every secret (password, session
// cookie, token, setup token) is stored only as a hash; the plaintext of a session, token or setup
// token exists in the one answer that hands it out.
import type { AdminApi } from '@conveyor/contracts';
import type { Prisma, PrismaClient } from '@conveyor/persistence';
import { recordAudit } from './audit.js';
import { AdminApiError } from './errors.js';
import { decoyHash, hashPassword, verifyPassword } from './passwords.js';
import { API_TOKEN_PREFIX, hashSecret, newSecret, SESSION_PREFIX, SETUP_PREFIX } from './secrets.js';

export type Role = AdminApi.Role;

/** Who is calling: a signed-in user or an API token. `actor` is what the audit log records. */
export interface Principal {
  username: string;
  role: Role;
  via: 'session' | 'token';
  actor: string;
}

export interface AuthOptions {
  sessionTtlMs: number;
  now?: () => Date;
}

/** Serializes the first-start bootstrap across admin replicas. */
const BOOTSTRAP_LOCK_KEY = 72707371;
/** lastUsedAt is written at most this often per token, so automation does not write on every call. */
const LAST_USED_RESOLUTION_MS = 60_000;
/** A token created without an expiry lasts this long: a forgotten token stops working on its own. */
export const DEFAULT_TOKEN_DAYS = 90;
const USER_ACTOR = 'user:';

export class AuthStore {
  private readonly now: () => Date;

  constructor(private readonly prisma: PrismaClient, private readonly options: AuthOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /**
   * First start: with a password, creates the admin user; without, creates a one-time setup token and
   * returns it (only to the replica that created it, so it is logged once). Nothing when a user exists.
   */
  async bootstrap(admin: { username: string; password?: string }): Promise<{ createdUser?: string; setupToken?: string }> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK_KEY})`);
      if ((await tx.adminUser.count()) > 0) {
        await tx.adminSetupToken.deleteMany({});
        return {};
      }
      if (admin.password) {
        await tx.adminUser.create({ data: { username: admin.username, passwordHash: await hashPassword(admin.password), role: 'admin' } });
        await tx.adminSetupToken.deleteMany({});
        await recordAudit(tx, { actor: 'system', resource: 'user', resourceId: admin.username, action: 'create', changes: ['role'] });
        return { createdUser: admin.username };
      }
      if ((await tx.adminSetupToken.count()) > 0) return {};
      const token = newSecret(SETUP_PREFIX);
      await tx.adminSetupToken.create({ data: { tokenHash: hashSecret(token) } });
      return { setupToken: token };
    });
  }

  async setupRequired(): Promise<boolean> {
    return (await this.prisma.adminUser.count()) === 0;
  }

  /** Creates the first admin with the setup token, and signs them in. */
  async completeSetup(input: { token: string; username: string; password: string }): Promise<{ principal: Principal; session: string; expiresAt: Date }> {
    // The cheap checks come before the password hash, so a request with no chance costs no scrypt;
    // the transaction below checks both again under the lock.
    if (!(await this.setupRequired())) throw new AdminApiError('conflict', 'body.token: setup is already complete; sign in instead', { field: 'body.token' });
    if (!(await this.prisma.adminSetupToken.findUnique({ where: { tokenHash: hashSecret(input.token) } }))) throw new AdminApiError('unauthenticated', 'body.token: the setup token is not valid', { field: 'body.token' });
    const passwordHash = await hashPassword(input.password);
    await this.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK_KEY})`);
      if ((await tx.adminUser.count()) > 0) throw new AdminApiError('conflict', 'body.token: setup is already complete; sign in instead', { field: 'body.token' });
      const found = await tx.adminSetupToken.findUnique({ where: { tokenHash: hashSecret(input.token) } });
      if (!found) throw new AdminApiError('unauthenticated', 'body.token: the setup token is not valid', { field: 'body.token' });
      await tx.adminUser.create({ data: { username: input.username, passwordHash, role: 'admin' } });
      await tx.adminSetupToken.deleteMany({});
      await recordAudit(tx, { actor: `user:${input.username}`, resource: 'user', resourceId: input.username, action: 'setup', changes: ['role'] });
    });
    return this.startSession(input.username, 'admin');
  }

  /** Null for an unknown user or a wrong password, alike and in about the same time. */
  async login(username: string, password: string): Promise<{ principal: Principal; session: string; expiresAt: Date } | null> {
    const user = await this.prisma.adminUser.findUnique({ where: { username } });
    const ok = await verifyPassword(password, user?.passwordHash ?? (await decoyHash()));
    if (!user || !ok || user.disabled) return null;
    return this.startSession(user.username, parseRole(user.role));
  }

  async logout(session: string): Promise<void> {
    await this.prisma.adminSession.deleteMany({ where: { tokenHash: hashSecret(session) } });
  }

  async authenticateSession(session: string): Promise<Principal | null> {
    if (!session.startsWith(SESSION_PREFIX)) return null;
    const row = await this.prisma.adminSession.findUnique({ where: { tokenHash: hashSecret(session) }, include: { user: true } });
    if (!row || row.expiresAt <= this.now() || row.user.disabled) return null;
    return { username: row.username, role: parseRole(row.user.role), via: 'session', actor: `user:${row.username}` };
  }

  /**
   * A token acts for the user who created it, and never beyond them: it stops working when that user
   * is disabled or deleted (both also revoke it), and it has at most that user's current role. A
   * token not created by a user (older ones minted by tokens) works no more.
   */
  async authenticateToken(secret: string): Promise<Principal | null> {
    if (!secret.startsWith(API_TOKEN_PREFIX)) return null;
    const row = await this.prisma.apiToken.findUnique({ where: { tokenHash: hashSecret(secret) } });
    const now = this.now();
    if (!row || row.revokedAt || (row.expiresAt && row.expiresAt <= now)) return null;
    if (!row.createdBy.startsWith(USER_ACTOR)) return null;
    const creator = await this.prisma.adminUser.findUnique({ where: { username: row.createdBy.slice(USER_ACTOR.length) }, select: { role: true, disabled: true } });
    if (!creator || creator.disabled) return null;
    if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.prisma.apiToken.update({ where: { id: row.id }, data: { lastUsedAt: now } });
    }
    const role = parseRole(row.role) === 'admin' && parseRole(creator.role) === 'admin' ? 'admin' : 'viewer';
    return { username: row.name, role, via: 'token', actor: `token:${row.id}` };
  }

  /** Drops expired sessions; called now and then, so the table does not grow without bound. */
  async sweepExpiredSessions(): Promise<number> {
    return (await this.prisma.adminSession.deleteMany({ where: { expiresAt: { lte: this.now() } } })).count;
  }

  // ------------------------------------------------------------ users

  async listUsers(): Promise<AdminApi.User[]> {
    const rows = await this.prisma.adminUser.findMany({ orderBy: { username: 'asc' }, take: 1000 });
    return rows.map(userDto);
  }

  async createUser(actor: Principal, input: { username: string; password: string; role: Role }): Promise<AdminApi.User> {
    const passwordHash = await hashPassword(input.password);
    return this.prisma.$transaction(async (tx) => {
      if (await tx.adminUser.findUnique({ where: { username: input.username } })) {
        throw new AdminApiError('conflict', `body.username: user ${JSON.stringify(input.username)} exists`, { field: 'body.username' });
      }
      const u = await tx.adminUser.create({ data: { username: input.username, passwordHash, role: input.role } });
      await recordAudit(tx, { actor: actor.actor, resource: 'user', resourceId: u.username, action: 'create', changes: ['password', 'role'] });
      return userDto(u);
    });
  }

  async updateUser(actor: Principal, username: string, input: { password?: string; role?: Role; disabled?: boolean }): Promise<AdminApi.User> {
    const passwordHash = input.password ? await hashPassword(input.password) : undefined;
    return this.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK_KEY})`);
      const existing = await tx.adminUser.findUnique({ where: { username } });
      if (!existing) throw AdminApiError.notFound('user', username);
      const demoted = input.role === 'viewer' || input.disabled === true;
      if (demoted && existing.role === 'admin' && !existing.disabled) await assertAnotherAdmin(tx, username);
      const u = await tx.adminUser.update({
        where: { username },
        data: { ...(passwordHash ? { passwordHash } : {}), ...(input.role ? { role: input.role } : {}), ...(input.disabled !== undefined ? { disabled: input.disabled } : {}) },
      });
      // A new password ends the user's other sessions; disabling ends all of them and revokes their tokens.
      if (passwordHash || input.disabled) await tx.adminSession.deleteMany({ where: { username } });
      if (input.disabled) await this.revokeTokensOf(tx, actor, username);
      await recordAudit(tx, { actor: actor.actor, resource: 'user', resourceId: username, action: 'update', changes: Object.keys(input) });
      return userDto(u);
    });
  }

  async deleteUser(actor: Principal, username: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK_KEY})`);
      const existing = await tx.adminUser.findUnique({ where: { username } });
      if (!existing) throw AdminApiError.notFound('user', username);
      if (existing.role === 'admin') await assertAnotherAdmin(tx, username);
      await this.revokeTokensOf(tx, actor, username);
      await tx.adminUser.delete({ where: { username } });
      await recordAudit(tx, { actor: actor.actor, resource: 'user', resourceId: username, action: 'delete' });
    });
  }

  // ------------------------------------------------------------ API tokens

  async listTokens(): Promise<AdminApi.ApiToken[]> {
    const rows = await this.prisma.apiToken.findMany({ where: { revokedAt: null }, orderBy: { createdAt: 'desc' }, take: 1000 });
    return rows.map(tokenDto);
  }

  async createToken(actor: Principal, input: { name: string; role: Role; expiresInDays?: number }): Promise<AdminApi.ApiTokenCreated> {
    const secret = newSecret(API_TOKEN_PREFIX);
    const id = newSecret('tok_').slice(0, 20);
    if (actor.via !== 'session') throw new AdminApiError('forbidden', 'header.authorization: an API token cannot create tokens; sign in as a user', { field: 'header.authorization' });
    const expiresAt = new Date(this.now().getTime() + (input.expiresInDays ?? DEFAULT_TOKEN_DAYS) * 86_400_000);
    const row = await this.prisma.$transaction(async (tx) => {
      const created = await tx.apiToken.create({ data: { id, name: input.name, role: input.role, tokenHash: hashSecret(secret), createdBy: actor.actor, expiresAt } });
      await recordAudit(tx, { actor: actor.actor, resource: 'api-token', resourceId: id, action: 'create', changes: ['name', 'role'] });
      return created;
    });
    return { token: tokenDto(row), secret };
  }

  async revokeToken(actor: Principal, id: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const res = await tx.apiToken.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: this.now() } });
      if (res.count === 0) throw AdminApiError.notFound('API token', id);
      await recordAudit(tx, { actor: actor.actor, resource: 'api-token', resourceId: id, action: 'revoke' });
    });
  }

  /** Revokes every live token the user created, each with its audit row. */
  private async revokeTokensOf(tx: Prisma.TransactionClient, actor: Principal, username: string): Promise<void> {
    const tokens = await tx.apiToken.findMany({ where: { createdBy: `${USER_ACTOR}${username}`, revokedAt: null }, select: { id: true } });
    if (!tokens.length) return;
    await tx.apiToken.updateMany({ where: { id: { in: tokens.map((t) => t.id) } }, data: { revokedAt: this.now() } });
    for (const t of tokens) await recordAudit(tx, { actor: actor.actor, resource: 'api-token', resourceId: t.id, action: 'revoke', changes: [`user:${username}`] });
  }

  private async startSession(username: string, role: Role): Promise<{ principal: Principal; session: string; expiresAt: Date }> {
    const session = newSecret(SESSION_PREFIX);
    const expiresAt = new Date(this.now().getTime() + this.options.sessionTtlMs);
    await this.prisma.adminSession.create({ data: { tokenHash: hashSecret(session), username, expiresAt } });
    return { principal: { username, role, via: 'session', actor: `user:${username}` }, session, expiresAt };
  }
}

/** Someone must still be able to administer: another admin who is not disabled. */
async function assertAnotherAdmin(tx: { adminUser: { count(args: { where: { role: string; disabled: boolean; username: { not: string } } }): Promise<number> } }, username: string): Promise<void> {
  if ((await tx.adminUser.count({ where: { role: 'admin', disabled: false, username: { not: username } } })) === 0) {
    throw new AdminApiError('conflict', `user ${JSON.stringify(username)} is the last admin; make another admin first`, { field: 'path.username' });
  }
}

function userDto(u: { username: string; role: string; disabled: boolean; createdAt: Date }): AdminApi.User {
  return { username: u.username, role: parseRole(u.role), disabled: u.disabled, createdAt: u.createdAt.toISOString() };
}

function parseRole(role: string): Role {
  return role === 'admin' ? 'admin' : 'viewer';
}

function tokenDto(row: { id: string; name: string; role: string; createdBy: string; createdAt: Date; expiresAt: Date | null; lastUsedAt: Date | null }): AdminApi.ApiToken {
  return {
    id: row.id,
    name: row.name,
    role: parseRole(row.role),
    createdBy: row.createdBy,
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  };
}

/** Whether `role` may do what `required` asks: admin ⊇ viewer. */
export function allows(role: Role, required: Role): boolean {
  return role === 'admin' || required === 'viewer';
}
