/**
 * Every prompt and message the extension shows goes through this one object. Production code uses the
 * VS Code window API; extension-host tests replace members to answer prompts and to capture messages
 * (the test API exposes it), so commands are tested end to end without clicking.
 */
import * as vscode from 'vscode';

export interface Ui {
  info(message: string, ...actions: string[]): Thenable<string | undefined>;
  warn(message: string, ...actions: string[]): Thenable<string | undefined>;
  error(message: string, ...actions: string[]): Thenable<string | undefined>;
  /** A modal yes/no; resolves true only on `confirmLabel`. */
  confirm(message: string, confirmLabel: string, detail?: string): Thenable<boolean>;
  inputBox(options: vscode.InputBoxOptions): Thenable<string | undefined>;
  quickPick<T extends vscode.QuickPickItem>(
    items: readonly T[] | Thenable<readonly T[]>,
    options: vscode.QuickPickOptions,
  ): Thenable<T | undefined>;
  saveDialog(options: vscode.SaveDialogOptions): Thenable<vscode.Uri | undefined>;
  openDialog(options: vscode.OpenDialogOptions): Thenable<vscode.Uri[] | undefined>;
}

export function windowUi(): Ui {
  return {
    info: (m, ...a) => vscode.window.showInformationMessage(m, ...a),
    warn: (m, ...a) => vscode.window.showWarningMessage(m, ...a),
    error: (m, ...a) => vscode.window.showErrorMessage(m, ...a),
    confirm: async (m, label, detail) => (await vscode.window.showWarningMessage(m, { modal: true, detail }, label)) === label,
    inputBox: (o) => vscode.window.showInputBox(o),
    quickPick: (items, o) => vscode.window.showQuickPick(items, o),
    saveDialog: (o) => vscode.window.showSaveDialog(o),
    openDialog: (o) => vscode.window.showOpenDialog(o),
  };
}
