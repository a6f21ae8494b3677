/**
 * A call whose `started` record could not be committed (commit before answer): it must not run, as
 * the log could not show it ran. Thrown by `GovernancePipeline.begin` to the step about to execute,
 * which answers {@link AuditUnavailable.error} instead (retryable: the log may be back next time);
 * a library caller that runs an approved call (`approve`) gets it as a `store-failure`.
 */
import { ToolEnvelopeError, type ToolError, toolError } from 'tool-envelope/core';

export class AuditUnavailable extends ToolEnvelopeError {
  /** What the call answers instead of running. */
  readonly error: ToolError;
  constructor(cause: unknown) {
    const why = (cause as Error)?.message ?? String(cause);
    super('store-failure', `the audit log could not commit the call's started record, so the call was not run: ${why}`, { cause });
    this.error = toolError('internal', 'audit-log-unavailable', `The audit log could not record the call before it ran, so it was not run: ${why}`, {
      retryable: true,
    });
  }
}
