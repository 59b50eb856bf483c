/**
 * The episodic layer's request handlers (docs/episodes.md), registered on the Core. Episodes live in the local
 * store only: a team namespace, or a scope of team namespaces only, is refused with InvalidState (`data.store:
 * "team"`) before anything is read or written.
 */
import type { z } from 'zod';
import { CairnError } from '../protocol/errors';
import { Requests, type RequestDef } from '../protocol/methods';
import type * as T from '../protocol/types';
import { searchEpisodes } from '../retrieval/episode-search';
import { propose, searchEvents, type EventVectorSearcher } from '../retrieval/events';
import { Episodes } from '../store/episodes';
import type { Store } from '../store/store';
import type { TeamRouter } from '../team/router';

type On = <P extends z.ZodType, R extends z.ZodType>(
  def: RequestDef<P, R>,
  fn: (p: z.infer<P>) => z.infer<R> | Promise<z.infer<R>>,
) => void;

export function teamRefusal(ns: string, field = 'namespace'): CairnError {
  return new CairnError('InvalidState', `episodes are kept in the local store only; ${ns} is a team namespace (docs/episodes.md#team)`, {
    field,
    store: 'team',
  });
}

export function registerEpisodeHandlers(
  on: On,
  store: Store,
  ctx: { team: () => TeamRouter | undefined; vectors: () => EventVectorSearcher | undefined },
): Episodes {
  const episodes = new Episodes(store);
  const notTeam = (ns: string | undefined) => {
    if (ns !== undefined && ctx.team()?.isTeam(ns)) throw teamRefusal(ns);
  };
  // A scope of team namespaces only would find nothing here: refused rather than answered empty. (A scope that also
  // names local namespaces is served for its local part, as the episodes there are all there is.)
  const notTeamScope = (scope: T.Scope | undefined) => {
    const team = ctx.team();
    if (!team || !scope) return;
    const own = [...(scope.namespaces ?? []), ...(scope.root !== undefined ? [scope.root] : [])];
    if (own.length > 0 && own.every((ns) => team.isTeam(ns))) throw teamRefusal(own[0], 'scope');
  };
  /** Every episodes method checks its scope first (notTeamScope), then runs. */
  const onLocal: On = (def, fn) =>
    on(def, (p) => {
      notTeamScope((p as { scope?: T.Scope }).scope);
      return fn(p);
    });
  onLocal(Requests.episodesStart, (p) => {
    notTeam(p.namespace);
    return episodes.start(p);
  });
  onLocal(Requests.eventsAppend, (p) => episodes.append(p));
  onLocal(Requests.episodesEnd, (p) => episodes.end(p));
  onLocal(Requests.episodesGet, (p) => episodes.get(p));
  onLocal(Requests.episodesList, (p) => episodes.list(p));
  onLocal(Requests.eventsSearch, (p) => searchEvents(store, episodes, p, ctx.vectors()));
  onLocal(Requests.episodesSearch, (p) => searchEpisodes(store, episodes, p, ctx.vectors()));
  onLocal(Requests.eventsExpand, (p) => episodes.expand(p));
  onLocal(Requests.episodesTimeline, (p) => episodes.timeline(p));
  onLocal(Requests.episodesPropose, (p) => {
    notTeam(p.namespace);
    return propose(store, episodes, p);
  });
  onLocal(Requests.episodesErase, (p) => episodes.erase(p));
  onLocal(Requests.episodesRemovals, (p) => episodes.removals(p));
  return episodes;
}
