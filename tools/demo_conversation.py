"""The demo's multi-session conversation: original text written for fieldrank (MIT, like the
package), in the shape of a LoCoMo conversation — two speakers, dated sessions, questions whose
evidence is a turn or two of the log. No text here comes from LoCoMo (which is CC BY-NC).

``tools/make_demo_data.py`` embeds these turns ("Speaker: text", as the LoCoMo loader embeds
them) and questions with all-MiniLM-L6-v2 and writes them into the packaged demo data.

Each question names its evidence by (session number, turn number within the session), both
from 1, so that editing one session does not shift the others. ``category`` follows LoCoMo's
names: single-hop (one turn answers), multi-hop (two turns together), temporal (a date or a
duration, read against the session date).
"""

from __future__ import annotations

SPEAKERS = ("Maya", "Jonas")

#: (session date as ISO 8601, [(speaker, text), ...]) in chronological order.
SESSIONS = [
    ("2024-03-02", [
        ("Maya", "Hey Jonas! Long time. How was the move to Leipzig?"),
        ("Jonas", "Exhausting but done. The flat is tiny, but the light in the mornings is amazing."),
        ("Maya", "Did you manage to bring the piano?"),
        ("Jonas", "No, it stayed at my parents' place. I bought a secondhand keyboard instead."),
        ("Maya", "Big news on my side: we got a puppy last weekend!"),
        ("Jonas", "No way! What kind?"),
        ("Maya", "A beagle mix from the shelter in Dresden. Eleven weeks old and chews everything."),
        ("Jonas", "Have you named him yet?"),
        ("Maya", "Pretzel. My daughter insisted."),
        ("Jonas", "Perfect. How is Lena taking to him?"),
        ("Maya", "She walks him every morning before school, which is a small miracle."),
        ("Jonas", "I started a new job too, at a company that builds software for bike-sharing fleets."),
        ("Maya", "That sounds right up your street. What do you do there?"),
        ("Jonas", "I plan the routes for the vans that move bikes between stations at night."),
        ("Maya", "Do you still cycle to work yourself?"),
        ("Jonas", "Every day, it's twenty minutes along the river."),
        ("Maya", "I'm jealous. Mine is forty-five minutes on the S-Bahn."),
        ("Jonas", "Let's talk again in two weeks?"),
        ("Maya", "Deal. Give my love to Tomasz."),
    ]),
    ("2024-03-16", [
        ("Jonas", "Maya! How's Pretzel?"),
        ("Maya", "He ate one of my running shoes on Tuesday. The left one, of course."),
        ("Jonas", "Ha! Are you still training for the half marathon?"),
        ("Maya", "Yes, the race is in Hamburg on the 28th of April."),
        ("Jonas", "What time are you aiming for?"),
        ("Maya", "Under two hours would make me very happy."),
        ("Jonas", "Tomasz and I signed up for a pottery class, Thursday evenings."),
        ("Maya", "You? Pottery? I need photos."),
        ("Jonas", "My first bowl looked like an ashtray. The teacher said it had character."),
        ("Maya", "Speaking of character, my boss announced she is leaving in June."),
        ("Jonas", "Oh no, the good one?"),
        ("Maya", "The good one. They might offer me her role, the team lead position."),
        ("Jonas", "You should go for it. You basically run that team already."),
        ("Maya", "I'm nervous about managing people I used to have lunch with."),
        ("Jonas", "That's normal. Talk to her before she leaves."),
        ("Maya", "Good idea, I'll ask her for coffee next week."),
        ("Jonas", "By the way, the keyboard broke. A key is stuck."),
        ("Maya", "Which one?"),
        ("Jonas", "Middle C, the one I need the most."),
    ]),
    ("2024-04-06", [
        ("Maya", "I have news: I said yes to the team lead job."),
        ("Jonas", "Congratulations! When do you start?"),
        ("Maya", "On the first of June, right after she leaves."),
        ("Jonas", "Did the coffee with her help?"),
        ("Maya", "A lot. She told me to hold one-on-ones every week from day one."),
        ("Jonas", "Wise woman."),
        ("Maya", "How is the pottery going?"),
        ("Jonas", "Better! I made a teapot that actually pours."),
        ("Maya", "Wow, from ashtray to teapot in three weeks."),
        ("Jonas", "Tomasz is better than me though, his mugs are sold at the studio's spring fair."),
        ("Maya", "You two should open a shop."),
        ("Jonas", "Work is intense: we are launching the night routing in Berlin next month."),
        ("Maya", "Is that the project with the vans?"),
        ("Jonas", "Yes, if it works we move 30 percent more bikes with the same number of drivers."),
        ("Maya", "And Pretzel has started obedience school. He is the worst in the class."),
        ("Jonas", "What does he do?"),
        ("Maya", "He steals the trainer's treats from her bag."),
        ("Jonas", "A beagle through and through."),
        ("Maya", "Also my knee hurts after long runs, so the physio told me to cut my mileage."),
        ("Jonas", "Will you still run Hamburg?"),
        ("Maya", "I'll run it, but I've given up on the two-hour goal."),
    ]),
    ("2024-05-11", [
        ("Jonas", "So, how did Hamburg go?"),
        ("Maya", "I finished in 2:07! My knee held up until kilometre 18."),
        ("Jonas", "That's great given the injury."),
        ("Maya", "Lena made a sign that said 'Run faster than Pretzel'."),
        ("Jonas", "Ha, did Pretzel come?"),
        ("Maya", "He stayed with my neighbour, who now wants a beagle too."),
        ("Jonas", "Our Berlin launch went well: we moved a third more bikes in the first week."),
        ("Maya", "That's exactly what you hoped for."),
        ("Jonas", "My manager wants me to do the same for Munich in the autumn."),
        ("Maya", "Will you have to move?"),
        ("Jonas", "No, I can do it from Leipzig with a few trips."),
        ("Maya", "I'm getting ready for the new role: I'm reading a book about feedback."),
        ("Jonas", "Which one?"),
        ("Maya", "Radical Candor. Half of it is obvious, the other half is scary."),
        ("Jonas", "Tomasz wants to go to Lisbon in August for our anniversary."),
        ("Maya", "Lisbon in August is hot, but the tiles are worth it."),
        ("Jonas", "Any restaurant tips?"),
        ("Maya", "Go to the little fish place near the Alfama tram stop; I forget its name."),
        ("Jonas", "I finally got the keyboard repaired, middle C works again."),
        ("Maya", "Play me something next time we talk!"),
    ]),
]

#: (question, category, [(session, turn), ...] evidence, both numbered from 1).
QUESTIONS = [
    ("What is the name of Maya's puppy?", "single-hop", [(1, 9)]),
    ("Where did Maya's dog come from?", "single-hop", [(1, 7)]),
    ("When did Maya get her puppy?", "temporal", [(1, 5)]),
    ("What does Jonas do at his new job?", "single-hop", [(1, 14)]),
    ("How long does Jonas's bike ride to work take?", "single-hop", [(1, 16)]),
    ("What did Pretzel chew up?", "single-hop", [(2, 2)]),
    ("When is Maya's half marathon?", "temporal", [(2, 4)]),
    ("What class did Jonas and Tomasz sign up for?", "single-hop", [(2, 7)]),
    ("Which key got stuck on Jonas's keyboard?", "single-hop", [(2, 19)]),
    ("What job did Maya accept?", "multi-hop", [(2, 12), (3, 1)]),
    ("When does Maya start as team lead?", "temporal", [(3, 3)]),
    ("What advice did Maya's boss give her?", "single-hop", [(3, 5)]),
    ("What has Jonas made in pottery class?", "multi-hop", [(2, 9), (3, 8)]),
    ("Why did Maya give up on finishing the half marathon in under two hours?", "multi-hop", [(3, 19), (3, 21)]),
    ("What was Maya's finishing time in Hamburg?", "single-hop", [(4, 2)]),
    ("How much did the Berlin launch increase the number of bikes moved?", "single-hop", [(4, 7)]),
    ("Which book about feedback is Maya reading?", "single-hop", [(4, 14)]),
    ("Where are Jonas and Tomasz going for their anniversary?", "single-hop", [(4, 15)]),
    ("Who looked after Pretzel during the race?", "single-hop", [(4, 6)]),
    ("What does Pretzel do at obedience school?", "single-hop", [(3, 17)]),
    ("What happened to Maya's running shoe in March 2024?", "temporal", [(2, 2)]),
]
