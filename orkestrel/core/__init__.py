"""orkestrel.core: the agent kit (pure asyncio, no Django).

Every public name is re-exported here from the module that defines it; ``__all__`` is pinned
by ``tests/core/test_exports.py``. Modules, by layer: bounds (abort, timeout, budget, usage),
observation (emitter, observer), records (messages, files, ranges), registries (tools, authority,
instructions, scopes), the provider contract (provider, think), conversations and workspaces
(with their managers and stores), the turn context, the loop (agent, chunks, channel,
scheduler), and durable jobs (jobs, registry, queue, runner).
"""

from . import (
    abort,
    agent,
    authority,
    budget,
    channel,
    chunks,
    constants,
    context,
    conversation,
    conversation_manager,
    conversation_store,
    emitter,
    errors,
    estimate,
    files,
    instructions,
    jobs,
    language,
    messages,
    observer,
    provider,
    queue,
    ranges,
    registry,
    runner,
    scheduler,
    scopes,
    text,
    think,
    timeout,
    tools,
    usage,
    workspace,
    workspace_manager,
    workspace_store,
)
from .abort import *  # noqa: F403
from .agent import *  # noqa: F403
from .authority import *  # noqa: F403
from .budget import *  # noqa: F403
from .channel import *  # noqa: F403
from .chunks import *  # noqa: F403
from .constants import *  # noqa: F403
from .context import *  # noqa: F403
from .conversation import *  # noqa: F403
from .conversation_manager import *  # noqa: F403
from .conversation_store import *  # noqa: F403
from .emitter import *  # noqa: F403
from .errors import *  # noqa: F403
from .estimate import *  # noqa: F403
from .files import *  # noqa: F403
from .instructions import *  # noqa: F403
from .jobs import *  # noqa: F403
from .language import *  # noqa: F403
from .messages import *  # noqa: F403
from .observer import *  # noqa: F403
from .provider import *  # noqa: F403
from .queue import *  # noqa: F403
from .ranges import *  # noqa: F403
from .registry import *  # noqa: F403
from .runner import *  # noqa: F403
from .scheduler import *  # noqa: F403
from .scopes import *  # noqa: F403
from .text import *  # noqa: F403
from .think import *  # noqa: F403
from .timeout import *  # noqa: F403
from .tools import *  # noqa: F403
from .usage import *  # noqa: F403
from .workspace import *  # noqa: F403
from .workspace_manager import *  # noqa: F403
from .workspace_store import *  # noqa: F403

__all__ = sorted(
    {
        *abort.__all__,
        *agent.__all__,
        *authority.__all__,
        *budget.__all__,
        *channel.__all__,
        *chunks.__all__,
        *constants.__all__,
        *context.__all__,
        *conversation.__all__,
        *conversation_manager.__all__,
        *conversation_store.__all__,
        *emitter.__all__,
        *errors.__all__,
        *estimate.__all__,
        *files.__all__,
        *instructions.__all__,
        *jobs.__all__,
        *language.__all__,
        *messages.__all__,
        *observer.__all__,
        *provider.__all__,
        *queue.__all__,
        *ranges.__all__,
        *registry.__all__,
        *runner.__all__,
        *scheduler.__all__,
        *scopes.__all__,
        *text.__all__,
        *think.__all__,
        *timeout.__all__,
        *tools.__all__,
        *usage.__all__,
        *workspace.__all__,
        *workspace_manager.__all__,
        *workspace_store.__all__,
    }
)
