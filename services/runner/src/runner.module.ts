import { Module, type DynamicModule } from '@nestjs/common';
import { IngestConsumer } from './ingest.consumer.js';
import { RunConsumer } from './run.consumer.js';
import { RunHandler } from './run.handler.js';
import { ModelDirectory } from './model-directory.js';
import { McpRegistry } from './mcp-registry.js';
import { ExternalRunners } from './external-runners.js';
import { PluginRuntime } from '@conveyor/service-kit';
import { SandboxAccess } from './sandbox-access.js';
import { PluginHostApiServer } from './plugin-host-api.js';

@Module({})
export class RunnerModule {
  static register(): DynamicModule {
    return { module: RunnerModule, controllers: [RunConsumer, IngestConsumer], providers: [RunHandler, ModelDirectory, McpRegistry, ExternalRunners, SandboxAccess, PluginRuntime, PluginHostApiServer] };
  }
}
