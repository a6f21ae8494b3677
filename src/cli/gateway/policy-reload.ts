/**
 * `tool-envelope gateway --policy FILE` (or the config file's `policy`) reloads its policy without
 * a restart: on SIGHUP and when the file changes. Each outcome is one log line with stable fields
 * (`policy reloaded` with the new and previous digests; `policy reload refused` with the errors and
 * the digest of the policy that stays in force). Without a policy SIGHUP is still handled (logrotate
 * and `systemctl reload` send it; its default action would end the process): one line says there is
 * nothing to reload.
 */
import type { GatewayLogger } from '../../observe/logger.js';
import type { GovernancePipeline } from '../../governance/pipeline.js';
import { PolicyReloader } from '../../governance/policy-reload.js';
import type { CompiledPolicy } from '../../governance/policy.js';

/** Where a reloaded policy goes: the pipeline, the log, and `applied` once it is in force. */
export interface PolicyReloadTargets {
  pipeline: GovernancePipeline;
  event: GatewayLogger['event'];
  applied?: () => void;
}

/** Starts reloading `file` into the pipeline; returns what stops it. */
export function reloadPolicyOnChange(file: string, policy: CompiledPolicy, { pipeline, event, applied }: PolicyReloadTargets): () => void {
  const reloader = new PolicyReloader(
    {
      file,
      apply: (next) => {
        pipeline.usePolicy(next);
        applied?.();
      },
      onApplied: (next, previous) => event('info', 'policy', 'policy reloaded', { file, digest: next.digest, previous }),
      onRefused: (err) =>
        event('error', 'policy', 'policy reload refused; the policy in force stays', {
          file,
          digest: reloader.policy.digest,
          code: err.code,
          error: err.message,
        }),
    },
    policy,
  );
  const onHangup = (): void => void reloader.reload();
  process.on('SIGHUP', onHangup);
  return () => {
    process.off('SIGHUP', onHangup);
    reloader.close();
  };
}

/** Without a policy: SIGHUP logs that there is nothing to reload, and the gateway keeps serving; returns what stops it. */
export function acknowledgeHangup(log: (line: string) => void): () => void {
  const onHangup = (): void => log('SIGHUP: no --policy to reload; nothing to do, still serving');
  process.on('SIGHUP', onHangup);
  return () => process.off('SIGHUP', onHangup);
}
