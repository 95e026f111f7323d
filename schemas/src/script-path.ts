/**
 * The shape a scripted model's `scriptFile` must have, wherever a flow is checked: a relative path
 * that stays inside the folder the host reads script files from (the flow file's folder for the
 * CLI, `<data>/scripts/` for the server). The runtime checks the file itself when it reads it
 * (symlinks, regular file, size: `runtime/src/models/script-file.ts`); this rule needs no disk.
 */
export function scriptPathRule(scriptFile: string): string | undefined {
  if (scriptFile.length === 0) return 'the path is empty';
  if (scriptFile.includes('\0')) return 'the path contains a NUL character';
  if (scriptFile.startsWith('/') || scriptFile.startsWith('\\') || /^[A-Za-z]:/.test(scriptFile))
    return 'it must be a relative path inside the flow’s folder, not an absolute path';
  if (scriptFile.split(/[\\/]/).includes('..')) return 'it must not leave the flow’s folder (`..`)';
  return undefined;
}
