/**
 * The console's notices after an action: the action redirects with a code (`?done=disabled`),
 * and the page shows that code's fixed sentence. A code not in this table shows nothing; no text
 * from the query string ever reaches a page (a crafted link cannot put words in the console's mouth).
 * The only other value read is `n`, a count, taken only when it is plain digits.
 */
const NOTICES: ReadonlyMap<string, string> = new Map([
  ['disabled', 'Endpoint disabled: every live worker applied it. Its deliveries are held, and failed at their deadlines unless you enable it first.'],
  ['disabled_hold', 'Endpoint disabled with hold: every live worker applied it. Its deliveries are held, with no deadline, until you enable it.'],
  [
    'disabled_unconfirmed',
    'Endpoint disabled, but not every live worker confirmed it in time: the workers named in the log may still send a few deliveries (see `hookrelay endpoints disable --help`).',
  ],
  ['already_disabled', 'That endpoint was already disabled: nothing changed.'],
  ['now_hold', 'That endpoint was already disabled; it is now on hold: its deliveries are kept, with no deadline, until you enable it.'],
  ['enabled', 'Endpoint enabled: workers deliver to it again.'],
  ['already_enabled', 'That endpoint was not disabled: nothing changed.'],
  ['enabled_replayed', 'Endpoint enabled; its held deliveries were replayed.'],
  ['approved', 'Approved: the identical call, when its run resumes, runs once. approval.resolved is announced to the approvers.'],
  ['rejected', 'Rejected: the call, when its run resumes, is denied with your reason. approval.resolved is announced to the approvers.'],
]);

/** Codes whose sentence can carry a count: the sentence with `{n}` in its place. */
const COUNTED: ReadonlyMap<string, string> = new Map([['enabled_replayed', 'Endpoint enabled; {n} held deliveries were replayed.']]);

export type NoticeCode =
  | 'disabled'
  | 'disabled_hold'
  | 'disabled_unconfirmed'
  | 'already_disabled'
  | 'now_hold'
  | 'enabled'
  | 'already_enabled'
  | 'enabled_replayed'
  | 'approved'
  | 'rejected';

/** The sentence for `?done=<code>` (with `n=<digits>` for a count), or undefined for an unknown or missing code. */
export function noticeFor(q: URLSearchParams): string | undefined {
  const code = q.get('done');
  if (code === null) return undefined;
  const text = NOTICES.get(code);
  if (text === undefined) return undefined;
  const n = q.get('n');
  const counted = COUNTED.get(code);
  return counted !== undefined && n !== null && /^\d{1,9}$/.test(n) ? counted.replace('{n}', String(Number(n))) : text;
}

/** The query string an action redirects with. */
export function noticeQuery(code: NoticeCode, n?: number): string {
  return `?done=${code}${n !== undefined && Number.isInteger(n) && n >= 0 ? `&n=${n}` : ''}`;
}
