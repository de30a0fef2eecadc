// `npm run send -- "hello"`: posts a signed HTTP-bot message to the example bot through the ingress.
// Env: INGRESS_URL (default http://127.0.0.1:8080), BOT_ID, HTTP_BOT_INBOUND_SECRET, SESSION_ID.
import { createHmac } from 'node:crypto';

const text = process.argv.slice(2).join(' ') || 'hello';
const ingress = process.env.INGRESS_URL ?? 'http://127.0.0.1:8080';
const botId = process.env.BOT_ID ?? '5f0c2b7e-3d4a-4e8b-9a61-0c2f7d9e1b34';
const secret = process.env.HTTP_BOT_INBOUND_SECRET ?? 'dev-inbound-secret';
const body = JSON.stringify({ session_id: process.env.SESSION_ID ?? 'demo', sender: { name: 'You' }, message: [{ type: 'Plain', text }] });
const ts = String(Math.floor(Date.now() / 1000));
const signature = 'sha256=' + createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
const res = await fetch(`${ingress}/bots/${botId}`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-lb-timestamp': ts, 'x-lb-signature': signature },
  body,
});
console.log(res.status, await res.text());
process.exitCode = res.ok ? 0 : 1;
