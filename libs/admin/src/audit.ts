import type { AdminApi } from '@conveyor/contracts';
import type { Prisma } from '@conveyor/persistence';

export interface AuditRecord {
  actor: string;
  resource: AdminApi.AuditEntry['resource'];
  resourceId: string;
  action: string;
  versionBefore?: number | null;
  versionAfter?: number | null;
  /** Field names only: the audit log never holds a value, so it never holds a secret. */
  changes?: string[];
}

/** Written in the transaction of the write it records, so a write and its audit row commit together. */
export async function recordAudit(tx: Prisma.TransactionClient, record: AuditRecord): Promise<void> {
  await tx.auditEntry.create({
    data: {
      actor: record.actor,
      resource: record.resource,
      resourceId: record.resourceId,
      action: record.action,
      versionBefore: record.versionBefore ?? null,
      versionAfter: record.versionAfter ?? null,
      changes: record.changes ?? [],
    },
  });
}
