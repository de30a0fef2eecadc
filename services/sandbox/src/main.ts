import { Module } from '@nestjs/common';
import { runService } from '@conveyor/service-kit';
import { SandboxEnv } from './env.js';
import { startSandbox } from './sandbox.providers.js';

@Module({})
class SandboxModule {}

await runService({
  name: 'sandbox',
  defaultPort: 8086,
  env: SandboxEnv,
  // Per call: one revision read, and a write when the workspace changed.
  databasePoolSize: 4,
  module: () => ({ module: SandboxModule }),
  start: (_app, infra) => startSandbox(infra),
});
