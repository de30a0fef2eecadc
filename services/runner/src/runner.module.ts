import { Module, type DynamicModule } from '@nestjs/common';
import { RunHandler } from './run.handler.js';
import { ModelDirectory } from './model-directory.js';

@Module({})
export class RunnerModule {
  static register(): DynamicModule {
    return { module: RunnerModule, providers: [RunHandler, ModelDirectory] };
  }
}
