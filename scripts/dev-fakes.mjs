// `npm run dev:fakes`: a fake OpenAI-compatible model on :8090 (answers "Echo: <your text>") and an
// HTTP-bot integrator on :8091 that prints every signed callback it receives.
import { ensureBuilt } from './ensure-built.mjs';

ensureBuilt();
await import('../test/dist/fakes/dev-fakes-main.js');
