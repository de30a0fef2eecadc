// `npm run dev:fakes`: local stand-ins for the two third parties the example config talks to:
// an OpenAI-compatible model on :8090 (answers "Echo: <your text>") and an HTTP-bot integrator on
// :8091 that prints every signed callback it receives.
import { ensureBuilt } from './ensure-built.mjs';

ensureBuilt();
const { startFakeOpenAI, startCallbackReceiver } = await import('../test/dist/fakes/index.js');
const llm = await startFakeOpenAI({ port: Number(process.env.FAKE_LLM_PORT ?? 8090), record: false });
const receiver = await startCallbackReceiver({
  port: Number(process.env.FAKE_CALLBACK_PORT ?? 8091),
  secret: process.env.HTTP_BOT_INBOUND_SECRET ?? 'dev-inbound-secret',
});
console.log(`fake LLM        ${llm.url}`);
console.log(`callback server ${receiver.url} (prints what the bot sends)`);
let shown = 0;
setInterval(() => {
  for (; shown < receiver.received.length; shown++) {
    const c = receiver.received[shown];
    const text = (c.json?.message ?? []).map((m) => m.text ?? `[${m.type}]`).join('');
    console.log(`callback #${c.n} session=${c.json?.session_id} seq=${c.json?.sequence} final=${c.json?.is_final} signature=${c.signatureValid ? 'ok' : c.signatureFailure}: ${text}`);
  }
}, 100);
process.on('SIGINT', async () => {
  await Promise.all([llm.close(), receiver.close()]);
  process.exit(0);
});
