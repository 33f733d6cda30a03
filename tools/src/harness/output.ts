/**
 * Where a tool's results go: a file or stdout (`-`), the plot beside them, and the JSON document
 * every tool writes (non-finite numbers as null: JSON has no NaN).
 */
import * as fs from 'fs'
import * as path from 'path'

/** Writes `text` to `file` ('-': stdout, resolved once flushed), creating its directory. */
export async function writeOut (file: string, text: string): Promise<void> {
  if (file === '-') {
    await new Promise<void>((resolve, reject) => process.stdout.write(text, (err) => (err == null ? resolve() : reject(err))))
  } else {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
    fs.writeFileSync(file, text)
  }
}

/**
 * Writes the SVG `render()` makes to `file` (its directory created) and notes it in `notes`
 * ("plot: <file>"); a failure goes to `errors` ("plot: <message>"), never thrown.
 */
export async function writePlot (file: string, render: () => Promise<string>, notes: string[], errors: string[]): Promise<void> {
  try {
    await writeOut(file, await render())
    notes.push(`plot: ${file}`)
  } catch (err) {
    errors.push(`plot: ${(err as Error).message}`)
  }
}

/** `doc` as the `--json` document of a tool: indented, NaN and ±Infinity as null, a final newline. */
export function jsonDocument (doc: unknown): string {
  return JSON.stringify(doc, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n'
}
