// Entry for `node --import @conveyor/telemetry/register`: installs the ESM loader hook the
// instrumentations need and starts the SDK before any application module is evaluated.
import { register } from 'node:module';
import { register as registerSyncHooks, supportsSyncHooks } from 'import-in-the-middle/register-hooks.mjs';
import { createInstrumentations, instrumentedModuleNames, startTelemetry } from './sdk.js';

const instrumentations = createInstrumentations();
const include = instrumentedModuleNames(instrumentations);
// Only the instrumented packages are wrapped, and where Node.js allows it the hook runs in the
// application's own thread (module.registerHooks): the threaded module.register hook pays a message
// round trip for every module a service loads, which doubled a service's start-up time.
if (supportsSyncHooks()) registerSyncHooks({ include });
else register('import-in-the-middle/hook.mjs', import.meta.url, { data: { include } });
await startTelemetry(process.env, instrumentations);
