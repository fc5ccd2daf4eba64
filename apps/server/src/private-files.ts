import fs from 'node:fs';

/**
 * The data folder holds password hashes, phone numbers, the code key and books: what the service
 * creates there is for its own user alone, whatever umask it was started with (022 would make the
 * database, its -wal and -shm, and the books readable by every local user). Each entry point
 * (server, admin, migrate-data) calls this first: folders 0700, files 0600, SQLite's included.
 */
export function createFilesPrivately(): void {
  process.umask(0o077);
}

/**
 * An existing data folder other users of the machine can read or enter (made before this
 * release, or by hand): its mode, for a warning at start; undefined when it is private or absent.
 */
export function modeIfOthersCanRead(dataDir: string): string | undefined {
  try {
    const { mode } = fs.statSync(dataDir);
    return (mode & 0o077) === 0 ? undefined : `0${(mode & 0o777).toString(8)}`;
  } catch {
    return undefined;
  }
}
