/** A migration is one numbered schema step; a backend applies the ones its database lacks, in order, on open. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Check that a migration set is numbered 1..n with no gap, so every database has one history. */
export function checkMigrations(migrations: readonly Migration[]): void {
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new Error(`migration ${migration.name} has version ${migration.version}, expected ${index + 1}`);
    }
  });
}
