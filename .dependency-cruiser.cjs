/**
 * The house's layers (see README "Layout"): imports point down the flow
 *   util → contract → config → intercept → send → notify → decide → dispatch / operations
 *   store → queue → isolation → admin → console → worker / cli
 * and nothing imports the edges (cli, worker, entry; the top-level workers/ processes import only
 * src/entry/). `npm run lint:layers` fails on a back-arrow; CI runs it.
 */
const LAYERS = {
  // Helpers with no hookrelay knowledge (withDefined, withTimeout, sameSecret, errorMessage, isObject).
  util: [],
  contract: ['util'],
  config: ['util', 'contract'],
  observability: ['util', 'contract', 'config'],
  // The AGENT-HOOKS-0.1 core: pure, over the contract only.
  intercept: ['util', 'contract'],
  // One request out: transport, SSRF guard, signing, templates, redaction; the remote interceptor.
  send: ['util', 'contract', 'config', 'observability', 'intercept'],
  store: ['util', 'contract', 'config', 'observability', 'intercept'],
  // Notifications: the payload, delivery through QStash or fetch, the retry schedule.
  notify: ['util', 'contract', 'config', 'observability', 'intercept', 'send'],
  // Decision webhooks: calls, parsing, control evaluation, the dispatcher's control runner.
  decide: ['util', 'contract', 'config', 'observability', 'intercept', 'send', 'notify', 'store'],
  dispatch: ['util', 'contract', 'config', 'observability', 'intercept', 'send', 'notify', 'decide'],
  // Operation records, deferred placeholders, approvals: over the store and control evaluation;
  // the dispatcher is a port (OperationDispatcher), so never dispatch; nothing but entry imports it.
  operations: ['util', 'contract', 'config', 'observability', 'intercept', 'send', 'notify', 'store', 'decide'],
  queue: ['util', 'contract', 'config', 'observability', 'intercept', 'send', 'notify', 'store'],
  // Endpoint isolation: the gate (Redis Lua), policy, exchange and the decision path's guard.
  isolation: ['util', 'contract', 'config', 'observability', 'intercept', 'send', 'notify', 'store', 'queue'],
  // Durable approvals (A1–A3): the queue and its resolver, decisions, events, answer tokens.
  // The human-intervention flow drives the operation store (claim, publish) through its port.
  approvals: ['util', 'contract', 'config', 'observability', 'intercept', 'store', 'queue', 'operations'],
  // What the CLI and the console share: replay (one loop), endpoint views, ledger statistics, the operator's queue handle.
  admin: ['util', 'contract', 'config', 'observability', 'store', 'queue', 'isolation'],
  console: ['util', 'contract', 'config', 'observability', 'store', 'queue', 'isolation', 'admin', 'approvals'],
  worker: ['util', 'contract', 'config', 'observability', 'intercept', 'send', 'notify', 'store', 'queue', 'isolation', 'admin', 'console', 'approvals'],
  cli: ['util', 'contract', 'config', 'observability', 'send', 'notify', 'store', 'queue', 'isolation', 'admin', 'console', 'approvals'],
  // Framework integrations (hookrelay/ai-sdk, hookrelay/openai-agents): the run adapter plus a
  // dispatcher passed in; never the queue or store, so importing one loads no BullMQ or pg.
  integrations: ['util', 'contract', 'intercept'],
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
