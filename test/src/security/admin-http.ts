// Raw HTTP for the security tests: the path goes out byte for byte as written (fetch would normalise
// some spellings away before they reach the server), and session identities re-sign-in when a route
// (sign-out) ended their session, so a sweep over every route can run in any order.
import http from 'node:http';
import { AdminApi } from '@conveyor/contracts';

export interface RawAnswer {
  status: number;
  text: string;
  headers: http.IncomingHttpHeaders;
}

/** `localAddress`: the loopback address the request comes from (127.0.0.2, ...), for per-address limits. */
export function rawRequest(baseUrl: string, method: string, path: string, options: { headers?: Record<string, string>; body?: string; localAddress?: string } = {}): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: url.hostname,
      port: url.port,
      method,
      path,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      headers: { ...(options.body !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(options.body)) } : {}), ...options.headers },
    }, (res) => {
      // A server-sent events stream never ends: its status and headers are the answer.
      if (String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        resolve({ status: res.statusCode ?? 0, text: '', headers: res.headers });
        res.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Who calls: nobody, a bearer token, or a signed-in user (who signs in again when signed out). */
export class Identity {
  private cookie: string | undefined;

  private constructor(readonly label: string, readonly role: 'anonymous' | AdminApi.Role, readonly via: 'none' | 'token' | 'session', private readonly baseUrl: string, private readonly secret?: string, private readonly credentials?: { username: string; password: string }) {}

  static anonymous(baseUrl: string): Identity {
    return new Identity('anonymous', 'anonymous', 'none', baseUrl);
  }

  static token(label: string, role: AdminApi.Role, baseUrl: string, secret: string): Identity {
    return new Identity(label, role, 'token', baseUrl, secret);
  }

  static async session(label: string, role: AdminApi.Role, baseUrl: string, username: string, password: string): Promise<Identity> {
    const id = new Identity(label, role, 'session', baseUrl, undefined, { username, password });
    await id.signIn();
    return id;
  }

  private async signIn(): Promise<void> {
    const answer = await rawRequest(this.baseUrl, 'POST', `${AdminApi.ADMIN_API_BASE}/auth/login`, { body: JSON.stringify(this.credentials) });
    const cookie = [answer.headers['set-cookie'] ?? []].flat().find((c) => c.startsWith(`${AdminApi.ADMIN_SESSION_COOKIE}=`));
    if (answer.status !== 200 || !cookie) throw new Error(`${this.label}: sign-in answered ${answer.status} ${answer.text}`);
    this.cookie = cookie.split(';')[0];
  }

  headers(): Record<string, string> {
    if (this.via === 'token') return { authorization: `Bearer ${this.secret}` };
    if (this.via === 'session') return { cookie: this.cookie! };
    return {};
  }

  async call(method: string, path: string, body?: string): Promise<RawAnswer> {
    const answer = await rawRequest(this.baseUrl, method, path, { headers: this.headers(), body });
    if (this.via === 'session') {
      const me = await rawRequest(this.baseUrl, 'GET', `${AdminApi.ADMIN_API_BASE}/auth/me`, { headers: this.headers() });
      if (me.status === 401) await this.signIn();
    }
    return answer;
  }
}
