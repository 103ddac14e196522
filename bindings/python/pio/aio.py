"""pio.aio - PIO requests in an asyncio event loop.

    async def main():
        r = pio.irecv(sim, 0, 7, a)
        st = await r                         # or: await pio.aio.recv(sim, 0, 7, a)
        await asyncio.wait_for(pio.aio.send(sim, 0, 8, b), 5)

libpio's completion descriptor (PIO_Getfd) is added to the running loop as
a reader while some request is awaited. It is level-triggered: readable
while a request is complete and not collected. So each time it is readable
the reader collects every pending request of the package that is complete
(pio.Request keeps the outcome: a later wait() or waitany returns it), and
resolves the futures of the awaited ones; when nothing is awaited any more
the reader is removed. The loop thread never blocks in libpio. Cancelling
an awaiting task leaves the request pending (collect it later, or exit).
Thread-safety: one loop per thread, as asyncio; several loops may await
requests at once.
"""

import asyncio

from . import Error, Request, _pending, _unreported, getfd, irecv, isend

_loops = {}  # loop -> {Request: Future}


def _forget():
    """PIO_Exit closes the descriptor: take it out of every loop first."""
    for loop in list(_loops):
        try:
            loop.remove_reader(getfd())
        except Exception:  # a closed loop, or PIO already gone
            pass
    _loops.clear()


def _on_readable(loop):
    waiters = _loops.get(loop, {})
    for r in list(_pending):
        try:
            done = r._poll()
        except Error:
            continue
        if not done:
            continue
        fut = waiters.pop(r, None)
        if fut is None:
            _unreported.add(r)  # somebody else's: waitany / wait() report it later
        elif not fut.done():
            try:
                fut.set_result(r._result())
            except Error as e:
                fut.set_exception(e)
    if not waiters and loop in _loops:
        loop.remove_reader(getfd())
        del _loops[loop]


async def wait(req: Request):
    """Await req's completion: its Status, or its Error raised."""
    if req.done:
        return req._result()
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    waiters = _loops.get(loop)
    if waiters is None:
        waiters = _loops[loop] = {}
        loop.add_reader(getfd(), _on_readable, loop)
    waiters[req] = fut

    def _gone(f):
        if f.cancelled():
            _loops.get(loop, {}).pop(req, None)

    fut.add_done_callback(_gone)
    _on_readable(loop)  # complete already: no need to wait for the loop's next poll
    return await fut


async def recv(partner, process, tag, buf, datatype=None):
    """pio.irecv, awaited: the Status."""
    return await wait(irecv(partner, process, tag, buf, datatype=datatype))


async def send(partner, process, tag, buf, connection=None, datatype=None):
    """pio.isend, awaited."""
    from . import DYNAMIC
    return await wait(isend(partner, process, tag, buf,
                            DYNAMIC if connection is None else connection, datatype=datatype))
