// Local stand-ins for the two third parties the example configuration talks to: an OpenAI-compatible
// model (answers "Echo: <your text>") and an HTTP-bot integrator that prints every signed callback it
// receives, one line each. `npm run dev:fakes` runs it on the machine; the dev Kubernetes overlay and
// compose's `fakes` profile run it as the dev-fakes image, so a first deployment answers without any
// external account.
import { startCallbackReceiver, startFakeOpenAI } from './index.js';

const host = process.env.FAKES_HOST ?? '127.0.0.1';
const llm = await startFakeOpenAI({ port: Number(process.env.FAKE_LLM_PORT ?? 8090), host, record: false });
const receiver = await startCallbackReceiver({
  port: Number(process.env.FAKE_CALLBACK_PORT ?? 8091),
  host,
  secret: process.env.HTTP_BOT_INBOUND_SECRET ?? 'dev-inbound-secret',
});
console.log(`fake LLM        ${llm.url}`);
console.log(`callback server ${receiver.url} (prints what the bot sends)`);

let shown = 0;
const printer = setInterval(() => {
  for (; shown < receiver.received.length; shown++) {
    const c = receiver.received[shown]!;
    const json = c.json as { session_id?: string; sequence?: number; is_final?: boolean; message?: { type?: string; text?: string }[] } | null;
    const text = (json?.message ?? []).map((m) => m.text ?? `[${m.type}]`).join('');
    console.log(`callback #${c.n} session=${json?.session_id} seq=${json?.sequence} final=${json?.is_final} signature=${c.signatureValid ? 'ok' : c.signatureFailure}: ${text}`);
  }
}, 100);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  clearInterval(printer);
  await Promise.all([llm.close(), receiver.close()]);
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
