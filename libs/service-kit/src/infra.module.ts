import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Infra } from './infra.js';

export const INFRA = Symbol('Infra');

/** Makes the service's connections injectable with `@Inject(INFRA)`. */
@Global()
@Module({})
export class InfraModule {
  static forRoot(infra: Infra): DynamicModule {
    return { module: InfraModule, providers: [{ provide: INFRA, useValue: infra }], exports: [INFRA] };
  }
}
