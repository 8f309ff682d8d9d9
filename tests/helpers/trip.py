"""A trip planner that runs its calls in parallel: the log behind the tests of what tells calls of
one function apart (the first words of their input), of what a parallel call is compared with
(the previous call on its own path), and of the detail of agentic calls that failed.

``plan_trip`` asks its model once, then runs ``research_city`` for three cities at once
(``asyncio.gather``), each asking twice (sights, then food: the prompts span several lines),
then ``check_budget``, which asks for a :class:`Budget` its model never gives (an
``OutputValidationError`` after the retry, caught), and ``book_hotel``, cancelled while it
waits (a ``CancelledError`` without a message, caught), and writes the plan.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import msgspec

from callctx import OutputValidationError, agentic, setup
from callctx.models import ScriptedModel

CITIES = ("Paris", "Rome", "Berlin")
SESSION = "trip"
NOT_A_BUDGET = "about two thousand euros, give or take"


class Budget(msgspec.Struct):
    euros: int


def trip_log(folder: Path) -> Path:
    """Run the planner; its event log (session ``trip``: 1 + 3 x 2 + 2 + 1 model calls)."""
    path = folder / "trip.jsonl"
    script = {
        "plan_trip": ["Paris, Rome, Berlin: in that order.", "The plan: three cities, four days each."],
        "research_city": [f"answer {i}" for i in range(6)],
        "check_budget": [NOT_A_BUDGET, NOT_A_BUDGET],
    }
    rt = setup(path, session_id=SESSION, model=ScriptedModel(script), service_name="trip-planner")

    @agentic
    async def research_city(city: str, days: int) -> str:
        """Research one city: what to see, then where to eat."""
        sights = await rt.aexec(f"What should a visitor see in {city} in {days} days?\nList three sights.")
        await asyncio.sleep(0)  # the other cities ask in between: their calls interleave
        food = await rt.aexec(f"Where should a visitor eat in {city}?\nList three places.\n  - one cheap")
        return f"{sights} / {food}"

    @agentic
    async def check_budget(cities: list[str]) -> Budget:
        """Check the trip fits the budget."""
        return await rt.aexec(f"What does a trip to {', '.join(cities)} cost?", schema=Budget)

    @agentic
    async def book_hotel(city: str) -> str:
        """Book a hotel (it waits for an answer that never comes)."""
        await asyncio.Event().wait()
        return "booked"

    @agentic
    async def plan_trip(cities: list[str]) -> str:
        """Plan a trip through several cities."""
        await rt.aexec(f"In which order should I visit {', '.join(cities)}?")
        notes = await asyncio.gather(*(research_city(c, 4) for c in cities))
        with contextlib.suppress(OutputValidationError):
            await check_budget(cities)
        booking = asyncio.ensure_future(book_hotel(cities[0]))
        await asyncio.sleep(0.01)
        booking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await booking
        return await rt.aexec("Write the plan from these notes:\n" + "\n".join(notes))

    asyncio.run(plan_trip(list(CITIES)))
    rt.close()
    return path
