/**
 * The house's layers (see README "Layout"): imports point down the flow
 *   contract → dispatch / operations → control → payload → delivery → queue → store
 * (the operator console reads store and queue, and is mounted by the worker and the CLI)
 * and nothing imports the edges (cli, worker, entry; the top-level workers/ processes import only
 * src/entry/). `npm run lint:layers` fails on a
 * back-arrow; CI runs it.
 */
const LAYERS = {
  contract: [],
  config: ['contract'],
  observability: ['contract', 'config'],
  interception: ['contract'],
  payload: ['contract', 'config', 'observability'],
  delivery: ['contract', 'config', 'observability', 'interception'],
  store: ['contract', 'config', 'observability', 'interception'],
  control: ['contract', 'config', 'observability', 'interception', 'payload', 'delivery', 'store'],
  dispatch: ['contract', 'config', 'observability', 'interception', 'payload', 'delivery', 'control'],
  // Operation records, deferred placeholders, approvals: over the store and control evaluation;
  // the dispatcher is a port (OperationDispatcher), so never dispatch; nothing but entry imports it.
  operations: ['contract', 'config', 'observability', 'interception', 'payload', 'delivery', 'store', 'control'],
  queue: ['contract', 'config', 'observability', 'interception', 'payload', 'delivery', 'store', 'isolation'],
  // Endpoint isolation: the gate (Redis Lua), policy, exchange and the decision path's guard.
  isolation: ['contract', 'config', 'observability', 'interception', 'delivery', 'store', 'queue'],
  // Durable approvals (A1–A3): the queue and its resolver, decisions, events, answer tokens.
  // The human-intervention flow drives the operation store (claim, publish) through its port.
  approvals: ['contract', 'config', 'observability', 'interception', 'store', 'queue', 'operations'],
  // What the CLI and the console share: replay (one loop), endpoint views, ledger statistics, the operator's queue handle.
  operator: ['contract', 'config', 'observability', 'store', 'queue', 'isolation'],
  console: ['contract', 'config', 'observability', 'store', 'queue', 'isolation', 'operator', 'approvals'],
  worker: ['contract', 'config', 'observability', 'interception', 'payload', 'delivery', 'store', 'queue', 'isolation', 'operator', 'console', 'approvals'],
  cli: ['contract', 'config', 'observability', 'payload', 'delivery', 'store', 'queue', 'isolation', 'operator', 'console', 'approvals'],
  // Framework integrations (hookrelay/ai-sdk, hookrelay/openai-agents): the run adapter plus a
  // dispatcher passed in; never the queue or store, so importing one loads no BullMQ or pg.
  integrations: ['contract', 'interception'],
};

const layerRules = Object.entries(LAYERS).map(([layer, allowed]) => ({
  name: `layer-${layer}`,
  comment: `src/${layer}/ may import only ${allowed.length ? allowed.map((l) => `src/${l}/`).join(', ') : 'itself (the bottom layer)'} and packages`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: '^src/', pathNot: [`^src/${layer}/`, ...allowed.map((l) => `^src/${l}/`)] },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'edges-are-not-imported',
      comment: 'src/entry/ (package and bin entries) is a composition root: no module imports it',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/entry/' },
      to: { path: '^src/entry/' },
    },
    {
      name: 'workers-use-the-package-entries',
      comment: 'workers/ (the deployable processes) import only the package entries (src/entry/), as a user worker file does',
      severity: 'error',
      from: { path: '^workers/' },
      to: { path: '^src/', pathNot: '^src/entry/' },
    },
    {
      name: 'workers-are-not-imported',
      comment: 'workers/ holds process entry points: nothing imports them',
      severity: 'error',
      from: {},
      to: { path: '^workers/' },
    },
    {
      name: 'no-circular',
      comment: 'a cycle makes the load order (and a lazy entry) fragile',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: { path: '^(src|workers)/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    includeOnly: '^(src|workers)/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'types', 'default'], extensions: ['.ts', '.js'] },
  },
};
