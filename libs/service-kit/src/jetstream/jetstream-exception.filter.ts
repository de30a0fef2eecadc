import { Catch, type RpcExceptionFilter } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';

/**
 * Nest's default RPC exception filter turns every error into `{ status: 'error', message }`, which
 * loses RetryableError / PermanentError. Registering this filter (globally on the microservice, or
 * with `@UseFilters` on a JetStream controller) hands the original error to JetStreamServer, which
 * then naks with the requested delay or dead-letters.
 * (Without it, `throw new RpcException(new PermanentError(...))` also works.)
 */
@Catch()
export class JetStreamExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}
