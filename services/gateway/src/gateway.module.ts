import { Module, type DynamicModule } from '@nestjs/common';

/** The gateway serves no routes of its own: health and metrics come from the service kit. */
@Module({})
export class GatewayModule {
  static register(): DynamicModule {
    return { module: GatewayModule };
  }
}
