/**
 * The recording archive (docs/calls.md, "Recording archive"): `createArchiver` builds the stage
 * the app runs after every call sync; `verifyArchive` is `boxwatch recordings verify`.
 */
export { createArchiver, type Archiver, type ArchiverDeps, type ArchivePassResult } from './archiver.js';
export { withArchiveFacts, archiveFactsFor, readArchiveFacts, type ArchiveRuleFacts, type ArchiveFailure } from '../rules/facts.js';
export { registerArchiveMetrics, type ArchiveMetrics } from './metrics.js';
export { nodeFs, type ArchiveFs, type ArchiveFile } from './files.js';
