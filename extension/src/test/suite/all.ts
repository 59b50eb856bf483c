// Suites in the order they run: activation first (it measures start-up), the disruptive ones last (git-writes and
// branches after git: they need the workspace to be a real repository, which the git suite makes).
import './activation.test';
import './tree.test';
import './hover.test';
import './commands.test';
import './settings.test';
import './agents.test';
import './episodes.test';
import './dashboard.test';
import './reconnect.test';
import './git.test';
import './git-writes.test';
import './branches.test';
