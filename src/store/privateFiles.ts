/**
 * The embedded store's folder trusts only its owner (W7): folders hookrelay creates are
 * 0700, files 0600, and what another process left there is believed only when it is the current
 * user's own — a regular file or folder (never a symbolic link), owned by this uid, not writable
 * by group or others. Each check answers with the reason a file is refused, for the message.
 */
import { chmodSync, lstatSync, mkdirSync, type Stats, statSync } from 'node:fs';
import { EmbeddedStoreUntrustedError } from '../contract/errors.ts';

const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
const GROUP_OR_WORLD_WRITABLE = 0o022;
const GROUP_OR_WORLD_ANY = 0o077;

/** This process's uid, or undefined where there are none (Windows): ownership is not checked there. */
function currentUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

function lstatOrUndefined(file: string, followLinks = false): Stats | undefined {
  try {
    return followLinks ? statSync(file) : lstatSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * `dir` (and missing parents) created 0700; an existing one must be a folder of ours and is
 * narrowed to 0700 (it holds the ledger, the private Redis files and the store socket). Throws
 * EmbeddedStoreUntrustedError with the reason when it is another user's. `followLinks`: a data dir the operator pointed at
 * through a link is the folder linked to; hookrelay's own subfolders never are links.
 */
export function ensurePrivateDir(dir: string, options: { followLinks?: boolean } = {}): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const followLinks = options.followLinks === true;
  const problem = ownFolderProblem(dir, { anyAccess: false, followLinks });
  if (problem !== undefined) {
    throw new EmbeddedStoreUntrustedError(
      `${dir} ${problem}: hookrelay keeps its data only in a folder of yours; set HOOKRELAY_DATA_DIR to one, or DATABASE_URL`,
    );
  }
  const stats = followLinks ? statSync(dir) : lstatSync(dir);
  if ((stats.mode & GROUP_OR_WORLD_ANY) !== 0) chmodSync(dir, PRIVATE_DIR_MODE);
}

/** Why `file` is not a file the current user alone wrote, or undefined when it is (missing: `is missing`). */
export function ownFileProblem(file: string): string | undefined {
  const stats = lstatOrUndefined(file);
  if (stats === undefined) return 'is missing';
  if (stats.isSymbolicLink()) return 'is a symbolic link';
  if (!stats.isFile()) return 'is not a regular file';
  return ownershipProblem(stats);
}

/**
 * Why `dir` is not a folder of the current user's own, or undefined. `anyAccess: true` also
 * refuses a folder group or others may enter or read (the store socket's folder).
 */
export function ownFolderProblem(dir: string, options: { anyAccess: boolean; followLinks?: boolean }): string | undefined {
  const stats = lstatOrUndefined(dir, options.followLinks === true);
  if (stats === undefined) return 'is missing';
  if (stats.isSymbolicLink()) return 'is a symbolic link';
  if (!stats.isDirectory()) return 'is not a folder';
  const problem = ownershipProblem(stats);
  if (problem !== undefined) return problem;
  if (options.anyAccess && (stats.mode & GROUP_OR_WORLD_ANY) !== 0) return `is open to other users (mode ${modeText(stats)}; hookrelay makes it 0700)`;
  return undefined;
}

function ownershipProblem(stats: Stats): string | undefined {
  const uid = currentUid();
  if (uid !== undefined && stats.uid !== uid) return `is owned by uid ${stats.uid}, not by you (uid ${uid})`;
  if ((stats.mode & GROUP_OR_WORLD_WRITABLE) !== 0) return `is writable by other users (mode ${modeText(stats)})`;
  return undefined;
}

function modeText(stats: Stats): string {
  return `0${(stats.mode & 0o777).toString(8)}`;
}

/**
 * Why `pid` is not a running process of the current user, or undefined when it is. `kill(pid, 0)`
 * answering EPERM means another user's process: not ours. Root may signal anyone, so on Linux the
 * owner of /proc/<pid> decides.
 */
export function ownProcessProblem(pid: number): { gone: true } | { gone: false; problem: string } | undefined {
  try {
    process.kill(pid, 0);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EPERM') return { gone: false, problem: `names process ${pid}, which belongs to another user` };
    return { gone: true };
  }
  const uid = currentUid();
  const proc = uid === undefined || process.platform !== 'linux' ? undefined : lstatOrUndefined(`/proc/${pid}`);
  if (proc !== undefined && proc.uid !== uid)
    return { gone: false, problem: `names process ${pid}, which belongs to uid ${proc.uid}, not to you (uid ${uid})` };
  return undefined;
}
