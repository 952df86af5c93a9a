// serverPath.ts -- finds the netc executable named by the `netc.serverPath`
// setting, the way a shell would: a bare name is looked up on PATH, a path
// (absolute, `~/...`, or relative to the workspace folder) is taken as is.
// Kept free of the `vscode` module so that `npm test` can test it in plain Node.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** True when `file` is a regular file this process may execute. */
export function isExecutableFile(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (process.platform !== 'win32') {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * The absolute path of the executable `command` names, or undefined when there
 * is none. `cwd` anchors relative paths such as `build/tools/netc/netc`.
 */
export function resolveExecutable(
  command: string,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): string | undefined {
  let cmd = command.trim();
  if (cmd === '') {
    return undefined;
  }
  if (cmd === '~' || cmd.startsWith('~/') || cmd.startsWith('~\\')) {
    cmd = path.join(os.homedir(), cmd.slice(1));
  }
  const isWindows = process.platform === 'win32';
  const extensions = isWindows
    ? ['', ...(env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').filter((e) => e !== '')]
    : [''];
  const firstExecutable = (base: string): string | undefined =>
    extensions.map((ext) => base + ext).find(isExecutableFile);

  if (path.isAbsolute(cmd) || cmd.includes('/') || (isWindows && cmd.includes('\\'))) {
    return firstExecutable(path.resolve(cwd, cmd));
  }
  const searchPath = env.PATH ?? env.Path ?? '';
  for (const dir of searchPath.split(path.delimiter)) {
    if (dir === '') {
      continue;
    }
    const found = firstExecutable(path.join(path.resolve(cwd, dir), cmd));
    if (found !== undefined) {
      return found;
    }
  }
  return undefined;
}
