// extension.ts -- the VS Code client of the netc language server. It runs
// `<netc.serverPath> lsp <netc.serverArgs...>` and speaks LSP to it over stdio
// for every `netsharp` document; it restarts the server when those settings
// change or on the command "Net#: Restart Language Server", and says which
// setting to fix when the executable cannot be started.
import * as vscode from 'vscode';
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorHandler,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from 'vscode-languageclient/node';
import { resolveExecutable } from './serverPath';

// The client id is also the settings prefix: vscode-languageclient reads the
// trace level from `netc.trace.server`.
const CLIENT_ID = 'netc';
const CLIENT_NAME = 'Net# Language Server';
const RESTART_COMMAND = 'netc.restartServer';
// A server that stops more often than this within the window is left stopped.
const MAX_RESTARTS = 4;
const RESTART_WINDOW_MS = 3 * 60 * 1000;

interface ServerSettings {
  serverPath: string;
  serverArgs: string[];
}

let client: LanguageClient | undefined;
let outputChannel: vscode.OutputChannel | undefined;
// Stops and starts run one after the other, never interleaved.
let queue: Promise<void> = Promise.resolve();

function enqueue(task: () => Promise<void> | void): Promise<void> {
  queue = queue.then(task, task);
  return queue;
}

function log(line: string): void {
  outputChannel?.appendLine(`netc: ${line}`);
}

function readSettings(): ServerSettings {
  const config = vscode.workspace.getConfiguration('netc');
  const serverPath = (config.get<string>('serverPath') ?? '').trim() || 'netc';
  const rawArgs = config.get<unknown>('serverArgs');
  const serverArgs = Array.isArray(rawArgs)
    ? rawArgs.filter((a): a is string => typeof a === 'string')
    : [];
  return { serverPath, serverArgs };
}

function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

async function showStartError(settings: ServerSettings, reason: string): Promise<void> {
  const openSettings = 'Open Settings';
  const showOutput = 'Show Output';
  const choice = await vscode.window.showErrorMessage(
    `Net#: cannot start the language server \`${settings.serverPath} lsp\`: ${reason}. ` +
      'Set "netc.serverPath" to the netc executable (for example <netc checkout>/build/tools/netc/netc) ' +
      'or put netc on PATH, then run "Net#: Restart Language Server".',
    openSettings,
    showOutput,
  );
  if (choice === openSettings) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'netc.serverPath');
  } else if (choice === showOutput) {
    outputChannel?.show(true);
  }
}

/**
 * A server that dies before it has answered `initialize` is not restarted
 * (startClient reports the failed start once); one that stops later is
 * restarted, at most MAX_RESTARTS times within RESTART_WINDOW_MS.
 */
class ServerErrorHandler implements ErrorHandler {
  private readonly stops: number[] = [];
  running = false;

  error(_error: Error, _message: unknown, count: number | undefined): ErrorHandlerResult {
    return { action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown };
  }

  closed(): CloseHandlerResult {
    if (!this.running) {
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    const now = Date.now();
    this.stops.push(now);
    while (this.stops.length > 0 && now - this.stops[0] > RESTART_WINDOW_MS) {
      this.stops.shift();
    }
    if (this.stops.length <= MAX_RESTARTS) {
      return { action: CloseAction.Restart, handled: true };
    }
    return {
      action: CloseAction.DoNotRestart,
      message:
        `The netc language server stopped ${this.stops.length} times in ${RESTART_WINDOW_MS / 60000} minutes ` +
        'and is not restarted again. See the "Net# Language Server" output, then run "Net#: Restart Language Server".',
    };
  }
}

// Does not wait for the server: one that hangs in `initialize` must not block
// a later restart or stop (stopping a starting client kills its process).
function startClient(): void {
  const settings = readSettings();
  const root = workspaceRoot();
  const command = resolveExecutable(settings.serverPath, process.env, root);
  if (command === undefined) {
    const where = /[\\/]/.test(settings.serverPath) ? '' : ' on PATH';
    const reason = `"${settings.serverPath}" was not found${where} or is not executable`;
    log(reason);
    void showStartError(settings, reason);
    return;
  }

  const args = ['lsp', ...settings.serverArgs];
  // No `transport` on purpose: TransportKind.stdio would append `--stdio` to
  // the arguments; without it the client still talks over stdin/stdout.
  const serverOptions: ServerOptions = {
    command,
    args,
    options: root !== undefined ? { cwd: root } : {},
  };
  const errorHandler = new ServerErrorHandler();
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ language: 'netsharp' }],
    outputChannel,
    errorHandler,
    // A failed start is reported below, not by the client's own pop-up.
    initializationFailedHandler: () => false,
  };
  const candidate = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  client = candidate;
  log(`starting ${command} ${args.join(' ')}`);
  const failed = async (error: unknown): Promise<void> => {
    if (client !== candidate) {
      return; // stopped or replaced while it was starting
    }
    client = undefined;
    try {
      await candidate.dispose();
    } catch {
      // A client that never ran cannot be stopped; its process is ended anyway.
    }
    log(`the language server did not start: ${error instanceof Error ? error.message : String(error)}`);
    void showStartError(
      settings,
      `${command} exited or did not answer the LSP "initialize" request ` +
        '(is it a netc with the `lsp` command? Its messages are in the "Net# Language Server" output)',
    );
  };
  candidate.start().then(
    () => {
      // start() can resolve although the server died during `initialize`
      // (vscode-languageclient 9 returns the start promise after its close
      // handler has cleared it), so the state is what counts.
      if (candidate.isRunning()) {
        errorHandler.running = true;
      } else {
        void failed(new Error('the server closed the connection during initialize'));
      }
    },
    failed,
  );
}

async function stopClient(): Promise<void> {
  const current = client;
  client = undefined;
  if (current === undefined) {
    return;
  }
  try {
    await current.dispose();
  } catch (error) {
    // A client that is still starting, or whose server died, cannot be stopped
    // cleanly; vscode-languageclient still ends the server process.
    log(`stopping the language server: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function restartClient(): Promise<void> {
  return enqueue(async () => {
    await stopClient();
    startClient();
  });
}

export function activate(context: vscode.ExtensionContext): void {
  outputChannel = vscode.window.createOutputChannel(CLIENT_NAME);
  context.subscriptions.push(
    outputChannel,
    vscode.commands.registerCommand(RESTART_COMMAND, () => restartClient()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (
        event.affectsConfiguration('netc.serverPath') ||
        event.affectsConfiguration('netc.serverArgs')
      ) {
        void restartClient();
      }
    }),
  );
  void enqueue(startClient);
}

export function deactivate(): Promise<void> {
  return enqueue(stopClient);
}
