/**
 * The cross-core placement probe as a process of its own (`node placement.js` prints a
 * PlacementProbe as JSON): a fresh process has no garbage-collector or compiler threads busy
 * from a benchmark, which would otherwise steal the vCPUs the spinning threads need.
 */
import { execFile } from 'child_process'
import { track } from '../harness/children'
import { probePlacement } from './limits'
import type { PlacementProbe } from './types'

/**
 * Runs the probe in a child process; null when it fails or takes longer than `timeoutMs` (it takes
 * under 1 s on an idle machine, up to 18 s seen with two other test suites running).
 */
export async function probePlacementIsolated (timeoutMs = 30_000): Promise<PlacementProbe | null> {
  return await new Promise((resolve) => {
    // Tracked: killed with this process if it is interrupted meanwhile.
    track(execFile(process.execPath, [__filename], { timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, stdout) => {
      if (err === null) {
        try {
          resolve(JSON.parse(stdout) as PlacementProbe | null)
          return
        } catch { /* fall through */ }
      }
      resolve(null)
    }))
  })
}

if (require.main === module) {
  process.stdout.write(JSON.stringify(probePlacement()) + '\n')
}
