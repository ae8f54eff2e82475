/** The console's route table: every page and action, by method, in the order the router tries them. */
import type { RouteTable } from '../router.ts';
import { approvalRoute, approvalsRoute, decideApprovalRoute } from './approvals.ts';
import { assetsRoute } from './assets.ts';
import { deliveriesRoute } from './deliveries.ts';
import { deliveryRoute } from './delivery.ts';
import { replayOneRoute, skipOneRoute } from './deliveryActions.ts';
import { disableEndpointRoute, enableEndpointRoute, endpointsRoute } from './endpoints.ts';
import { countsApiRoute, overviewApiRoute, overviewRoute } from './overview.ts';
import { replayConfirmRoute, replayPreviewRoute } from './replay.ts';
import { loginRoute, logoutRoute } from './signIn.ts';
import { statusesApiRoute } from './statuses.ts';

export const CONSOLE_ROUTES: RouteTable = {
  public: [assetsRoute, loginRoute],
  get: [
    overviewRoute,
    overviewApiRoute,
    countsApiRoute,
    statusesApiRoute,
    deliveriesRoute,
    deliveryRoute,
    replayPreviewRoute,
    endpointsRoute,
    approvalsRoute,
    approvalRoute,
  ],
  post: [logoutRoute, replayOneRoute, skipOneRoute, replayConfirmRoute, disableEndpointRoute, enableEndpointRoute, decideApprovalRoute],
};
