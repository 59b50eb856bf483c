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
  const local =
    <P extends { scope?: T.Scope }, R>(fn: (p: P) => R) =>
    (p: P) => {
      notTeamScope(p.scope);
      return fn(p);
    };
  on(
    Requests.episodesStart,
    local((p: T.EpisodeStartParams) => {
      notTeam(p.namespace);
      return episodes.start(p);
    }),
  );
  on(
    Requests.eventsAppend,
    local((p: T.EventAppendParams) => episodes.append(p)),
  );
  on(
    Requests.episodesEnd,
    local((p: T.EpisodeEndParams) => episodes.end(p)),
  );
  on(
    Requests.episodesGet,
    local((p: T.EpisodeGetParams) => episodes.get(p)),
  );
  on(
    Requests.episodesList,
    local((p: T.EpisodeListParams) => episodes.list(p)),
  );
  on(
    Requests.eventsSearch,
    local((p: T.EventSearchParams) => searchEvents(store, episodes, p, ctx.vectors())),
  );
  on(
    Requests.episodesSearch,
    local((p: T.EpisodeSearchParams) => searchEpisodes(store, episodes, p, ctx.vectors())),
  );
  on(
    Requests.eventsExpand,
    local((p: T.EventExpandParams) => episodes.expand(p)),
  );
  on(
    Requests.episodesTimeline,
    local((p: T.EpisodeTimelineParams) => episodes.timeline(p)),
  );
  on(
    Requests.episodesPropose,
    local((p: T.EpisodeProposeParams) => {
      notTeam(p.namespace);
      return propose(store, episodes, p);
    }),
  );
  on(
    Requests.episodesErase,
    local((p: T.EpisodeEraseParams) => episodes.erase(p)),
  );
  on(
    Requests.episodesRemovals,
    local((p: T.EpisodeRemovalsParams) => episodes.removals(p)),
  );
  return episodes;
}
