// Entry for `node --import @conveyor/telemetry/register`: installs the ESM loader hook the
// instrumentations need and starts the SDK before any application module is evaluated.
import { register } from 'node:module';
import { startTelemetry } from './sdk.js';

register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
startTelemetry();
