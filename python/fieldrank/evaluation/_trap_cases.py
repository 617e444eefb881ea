"""Trap families of the agent-life benchmark (issue 38): the cue's words in the wrong memories.

Written for this project (no LoCoMo text). The adversarial suite's templates (:mod:`._memory_cases`)
put each case's trap in two or three memories and keep the cue's words mostly where they belong;
in memories a user really produces the cue's words are everywhere: the help desk someone was rude
about, the pizza places the team chatted about, the phone number said twice in a year. Each family
below is a hand-written *base* per template (cue, relevant memory and what the trap is made of)
and :func:`trap_scenarios` turns a base into memories the way a user produces them: names,
months and places drawn (seeded) from small vocabularies, 0-2 entities per memory, ages in days.

* ``te`` (case (e), salient memories that share the cue's words): ``(cue, phrase, target,
  target entities)``. The target answers the cue without ``phrase`` (the cue's words); six
  memories hold ``phrase`` in emotionally charged, irrelevant stories (three of them important
  and strongly valenced), written from :data:`SALIENT_PATTERNS`.
* ``tb`` (case (b), chatter restating the cue beside a durable rule): ``(cue, topic, rule)``. The
  rule is the user's durable rule about the cue's subject (importance 0.75-0.9); four recent
  chatter memories restate ``topic`` (the cue's subject in the cue's words, :data:`CHATTER_PATTERNS`).
* ``td`` (case (d), unmarked restatements months apart): ``(entity, cue, stale, echo, current,
  neighbour)``. ``stale`` states a value (8-11 months ago), ``echo`` mentions the same old value in
  passing (5-7 months ago), ``current`` states the new value (1-3 months ago) with no
  ``supersedes=``; ``neighbour`` shares the entity. The relevant memory is ``current``.
* ``ta`` (case (a), old durable constraints with no shared word): ``(constraint, cue, distractor,
  distractor, distractor)``: the constraint (importance 0.85-0.95, 13-24 months old, never
  recalled) shares no content word with the cue; the three distractors are recent chatter
  close to the cue.

Every base is one template (one cue); the benchmark splits templates into tuning and held-out
halves (:func:`fieldrank.evaluation._agent_life.template_splits`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CHATTER_PATTERNS", "SALIENT_PATTERNS", "TRAP_CASES", "TRAP_CONSTRAINTS", "TRAP_RULES",
           "TRAP_SALIENT", "TRAP_STALE", "trap_scenarios", "trap_texts"]

#: The trap families, named after the seed-003 case each one sharpens.
TRAP_CASES = ("ta", "tb", "td", "te")

PEOPLE = ("Gary", "Linda", "Marcus", "Priyanka", "Tobias", "Renee", "Hector", "Wendy", "Jamal", "Ingrid",
          "Desmond", "Fiona", "Raj", "Colette", "Bruno", "Agnes", "Teo", "Marisol", "Stefan", "Yvonne")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")

#: Charged stories around a phrase (``{p}``): who, when, how it felt. Not one of them answers a cue.
SALIENT_PATTERNS = (
    "{n} from the {p} was so rude to me, I was furious for days.",
    "I cried in the car after the whole {p} disaster in {m}.",
    "Worst afternoon ever, the {p} thing with {n} still makes my blood boil.",
    "I can't stop thinking about what happened with the {p} in {m}, so humiliating.",
    "{n} and I had a huge fight about the {p} again last night.",
    "So proud of {n} for finally sorting out the {p} mess on their own!",
    "The {p} story from {m} still gives me a knot in my stomach.",
    "I ranted to {n} about the {p} for an hour, I was shaking.",
    "Honestly the {p} drama in {m} was the most stressful week of my year.",
    "{n} laughed so hard when I told the {p} story at dinner, best night!",
    "I'm still mad that the {p} ruined my birthday in {m}.",
    "Panicked when {n} mentioned the {p} again, I thought it was all over.",
)

#: Chatter restating a topic (``{t}``) the user talked about: nothing in it is a rule or an answer.
CHATTER_PATTERNS = (
    "We talked about {t} with {n} at lunch today.",
    "{n} and I went back and forth about {t} again, lol.",
    "Half of the standup was about {t}, as usual.",
    "Funny, {n} asked me about {t} too this morning.",
    "Spent the evening chatting about {t} with {n}.",
    "Someone on the group chat brought up {t} again.",
    "Note to self: {n} had thoughts on {t}.",
    "Big debate about {t} at the {m} offsite, no conclusion.",
)

# (cue, phrase the cue uses, target that answers it without the phrase, target entities)
TRAP_SALIENT: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("What's the IT help desk number?", "help desk", "Tech support picks up on extension 4410.", ()),
    ("What's the door code for the storage unit?", "storage unit",
     "Our locker at SafeKeep on Route 9 opens with 2580.", ()),
    ("When is my eye exam?", "eye exam", "Optometrist visit with Dr. Hsu on the 14th at 9:15.", ("Dr. Hsu",)),
    ("What's the wifi password at the lake house?", "lake house",
     "The cabin router key is loon-8832, written under the router.", ("the lake house",)),
    ("What time does Sofia's daycare close?", "daycare",
     "Pickup for Sofia has to be before 5:45, they lock up right after.", ("Sofia",)),
    ("Which gate does the Berlin flight leave from?", "Berlin flight",
     "Boarding pass says B22 for LH 2291 to Tegel.", ("Berlin",)),
    ("What's the landlord's email?", "landlord", "Rent questions go to m.okoro@rentmail.com.", ()),
    ("How much is the gym membership?", "gym", "Fitness club dues are 39 dollars a month, billed on the 1st.",
     ("the gym",)),
    ("What's the vet's phone number?", "vet", "The animal clinic on Ridge Road answers at 555-0463.", ()),
    ("When does the pharmacy close on Saturdays?", "pharmacy",
     "The drugstore on Elm shuts at 4 pm on the weekend.", ()),
    ("What is the school office phone number?", "school office",
     "Attendance line for Lincoln Elementary: 555-0718.", ("Lincoln Elementary",)),
    ("What's the account number for the electricity bill?", "electricity bill",
     "Power company customer ID is 88-20417-3.", ()),
    ("Who is the contact at the moving company?", "moving company",
     "Our guy at Swift Relocations is Dario, cell 555-0291.", ("Dario",)),
    ("What's the address of the new office?", "new office",
     "From March we sit at 400 Harbor Street, 7th floor.", ()),
    ("What size are the air filters for the furnace?", "furnace",
     "Heater filters are 16x25x1, buy the MERV 8 ones.", ()),
    ("Which bus goes to the stadium?", "stadium", "The 31 drops you right at the arena's north gate.", ()),
    ("What's the reservation number for the Lisbon hotel?", "Lisbon hotel",
     "Booking ref for our stay in Alfama: QX-55810.", ("Lisbon",)),
    ("When is the car insurance renewal?", "car insurance", "Auto policy with Mapfre renews on October 2nd.", ()),
    ("What's the login for the kids' school portal?", "school portal",
     "Parent account for Classlink is jgarcia_fam.", ()),
    ("How do I reset the router?", "router", "Hold the pinhole button on the back of the modem for ten seconds.", ()),
    ("What's the plumber's name?", "plumber", "The guy who fixed the leaking pipes is Walt Brennan.",
     ("Walt Brennan",)),
    ("What time is the team standup?", "standup", "Daily sync is at 9:40 on the team's Zoom link.", ()),
    ("What's the tracking number for the laptop order?", "laptop order",
     "UPS shipment for the new ThinkPad: 1Z84F2260391.", ()),
    ("What's Nadia's allergy?", "allergy", "Nadia reacts badly to sesame, even traces.", ("Nadia",)),
    ("Where is the spare key for the shed?", "shed", "Garden hut key hangs on the hook inside the garage door.",
     ()),
    ("What's the budget for the offsite?", "offsite", "Finance capped the team retreat at 12,000 euros.", ()),
    ("What's the registration deadline for the marathon?", "marathon",
     "Sign-ups for the city 42k close on February 28th.", ()),
    ("What's the customer number for the internet provider?", "internet provider",
     "Fiber contract ID with Telco One is 30029481.", ()),
    ("Which room is the board meeting in?", "board meeting", "Directors gather in the Cedar conference suite.",
     ()),
    ("What time does the swimming pool open?", "swimming pool", "Lap lanes at the aquatic centre start at 6:30.",
     ()),
    ("What's the emergency number for the alarm company?", "alarm company",
     "If the sirens go off call SecureHome at 555-0880.", ()),
    ("When is the tax return due?", "tax return", "Filing with the IRS this year has to be in by April 15th.",
     ()),
    ("What's the name of Leo's pediatrician?", "pediatrician", "Leo sees Dr. Amara Osei for checkups.",
     ("Leo", "Dr. Amara Osei")),
    ("How much did the roof repair cost?", "roof repair", "Fixing the shingles came to 3,400 dollars in the end.",
     ()),
    ("Where do we keep the passports?", "passports", "Travel documents are in the fire safe in the closet.", ()),
    ("What's the combination for the bike lock?", "bike lock", "The cable on my bicycle opens with 0614.",
     ()),
    ("Which platform does the train to Porto leave from?", "train to Porto",
     "The Alfa Pendular north departs from track 5.", ("Porto",)),
    ("What's the office cleaner's schedule?", "cleaner", "Housekeeping comes Tuesdays and Fridays after six.",
     ()),
    ("When is Grandma's eye surgery?", "eye surgery", "Grandma's cataract operation is set for May 19th.",
     ("Grandma",)),
    ("What's the password for the family Netflix?", "Netflix", "Our streaming account uses popcorn-Sunday-22.",
     ()),
)

# (cue, the cue's topic as chatter restates it, the user's durable rule about it)
TRAP_RULES: tuple[tuple[str, str, str], ...] = (
    ("Recommend a good pizza place near the office.", "the best pizza places near the office",
     "My standing rule: I only eat at places with a certified gluten-free kitchen, I'm coeliac."),
    ("Book a table for the team dinner on Friday.", "where to go for the team dinner",
     "For any team meal, always pick a place with vegan options; Ruth and Omid are vegan."),
    ("Schedule a call with the Tokyo team.", "calls with the Tokyo team",
     "I never take meetings after 7 pm my time, no matter the timezone."),
    ("Which airline should I fly to the conference?", "airlines for the conference trip",
     "Company travel policy: economy only on flights under six hours, always booked through Navan."),
    ("Order new laptops for the interns.", "laptops for the interns",
     "Hardware purchases above 1,500 dollars per unit need IT approval first."),
    ("Plan a weekend trip for the kids.", "weekend trips with the kids",
     "Rule for family trips: no more than three hours of driving each way, Mila gets carsick."),
    ("What should I cook for dinner tonight?", "what to cook for dinner",
     "House rule: no red meat on weekdays, we agreed on that in January."),
    ("Find a hotel for the Madrid offsite.", "hotels for the Madrid offsite",
     "Offsite venues must be step-free; Carlos uses a wheelchair."),
    ("Pick a movie for family movie night.", "movies for family movie night",
     "Family rule: nothing above PG for movie night while the twins are under ten."),
    ("Can I push the hotfix straight to production?", "pushing hotfixes to production",
     "Every production change needs a second reviewer, hotfixes included."),
    ("Buy a birthday present for my niece.", "birthday presents for my niece",
     "Gift rule we agreed on with my sister: no screens and no plastic toys for the kids."),
    ("Set up a meeting with the new vendor.", "meeting the new vendor",
     "Any new vendor must pass the security questionnaire before we share anything with them."),
    ("What should we serve at the housewarming party?", "food for the housewarming party",
     "No nuts in anything we serve at home; Jonah's allergy is severe."),
    ("Choose a gym to join near the apartment.", "gyms near the apartment",
     "I committed to never signing a fitness contract longer than three months."),
    ("Where should we go for our anniversary?", "anniversary ideas",
     "We promised each other: anniversaries are always somewhere neither of us has been."),
    ("Reply to the journalist asking about the layoffs.", "the journalist asking about the layoffs",
     "Only the comms team talks to press; everyone else forwards media requests."),
    ("Pick a date for the product launch.", "dates for the product launch",
     "Launches never go out on a Friday or the day before a public holiday."),
    ("Get a babysitter for Saturday night.", "babysitters for Saturday night",
     "Any sitter for the kids needs a background check and infant CPR certification."),
    ("Should I accept the meeting invite from the recruiter?", "the recruiter's meeting invite",
     "My rule: no recruiter calls during work hours, evenings only."),
    ("Choose a coffee shop for the client meeting.", "coffee shops for client meetings",
     "Client meetings only happen in quiet places with private seating, never open cafes."),
    ("Plan the menu for Thanksgiving.", "the Thanksgiving menu",
     "Dad is on a low-sodium diet for his heart; every family meal must respect it."),
    ("Which cloud region should the new service use?", "cloud regions for the new service",
     "All customer data stays in EU regions, that's a contractual requirement."),
    ("Can I share the Q3 numbers with the partner?", "sharing the Q3 numbers",
     "Financial figures are never shared externally before the earnings call."),
    ("Sign Ava up for a summer camp.", "summer camps for Ava",
     "Camps for the kids must be day camps; no overnight stays until they're twelve."),
    ("Book a dentist for Eli.", "dentists for Eli",
     "Healthcare for the kids only through providers in our Cigna network."),
    ("Pick a paint colour for the living room.", "paint colours for the living room",
     "The lease says walls stay neutral; any colour has to be approved by the landlord."),
    ("Organise drinks after the release.", "drinks after the release",
     "Team celebrations always include alcohol-free options and end by 9 pm."),
    ("Choose a database for the analytics project.", "databases for the analytics project",
     "Architecture rule: no new datastore without an ADR reviewed by the platform team."),
    ("What should I wear to the wedding in June?", "outfits for the June wedding",
     "I only buy secondhand clothes now, that's my sustainability pledge."),
    ("Get the car washed this weekend.", "car washes this weekend",
     "Water restrictions: no car washing at home between May and September."),
    ("Find a tutor for Noah's maths.", "maths tutors for Noah",
     "Tutors for the kids must come through the school's approved list."),
    ("Which charity should we donate to this year?", "charities to donate to this year",
     "We give 2 percent of income every year, split between local food banks only."),
    ("Send the contract to the client for signature.", "sending the contract to the client",
     "Contracts go out only after legal has stamped the final PDF."),
    ("Plan a hike for Sunday.", "hikes for Sunday",
     "Hiking rule: always tell Marta the route and be back before dark."),
    ("Can I give the new hire access to the finance folder?", "access to the finance folder",
     "Finance folders are need-to-know; access only with the CFO's written approval."),
    ("Book a massage for my birthday.", "massages for my birthday",
     "Since the back surgery, only licensed physiotherapists work on my back."),
    ("Choose snacks for the kids' football team.", "snacks for the football team",
     "The club policy is fruit and water only at matches, no sweets."),
    ("Pick a restaurant for lunch with my manager.", "lunch spots with my manager",
     "I keep work lunches under 30 dollars per person, expensed to the team budget."),
    ("Get a quote for new windows.", "quotes for new windows",
     "Any home improvement over 2,000 dollars needs three quotes before we choose."),
    ("Plan a night out for Jess's bachelorette.", "Jess's bachelorette night out",
     "Jess asked for no strip clubs and no drinking games, she was very clear."),
)

# (entity, cue, stale statement, passing mention of the stale value, current statement, neighbour)
TRAP_STALE: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("Nadine", "What's Nadine's phone number?", "Nadine's phone number is 555-0312.",
     "Called Nadine on 555-0312 about carpooling.", "Nadine's number is 555-0347.", "Nadine is hosting book club."),
    ("Lyra", "Which message queue does Lyra use?", "Lyra uses RabbitMQ for its jobs.",
     "RabbitMQ queues for Lyra backed up on Monday.", "Lyra's jobs run on Amazon SQS.", "Lyra's retro is on Friday."),
    ("Marcus", "Where does Marcus live?", "Marcus lives in Leeds.", "Visited Marcus in Leeds, great pub quiz.",
     "Marcus lives in Manchester, near the station.", "Marcus is training for a triathlon."),
    ("Helix", "Who is the Helix product owner?", "The Helix product owner is Karen.",
     "Karen presented the Helix roadmap at the all-hands.", "Helix's product owner is Devon.",
     "Helix shipped three features this quarter."),
    ("Mom", "What's Mom's address?", "Mom's address is 14 Willow Lane.", "Sent flowers to Mom at 14 Willow Lane.",
     "Mom's address is 3 Harbour View, flat 2.", "Mom started a pottery class."),
    ("Atlas", "What's the Atlas deploy day?", "Atlas deploys every Tuesday.",
     "Another smooth Tuesday deploy for Atlas.", "Atlas deploys on Wednesdays.",
     "Atlas has a new logo from the design team."),
    ("Priya", "What team is Priya on?", "Priya is on the payments team.",
     "Priya fixed a nasty payments bug this week.", "Priya is on the search team.", "Priya ran a 10k in June."),
    ("dentist", "Who is my dentist?", "My dentist is Dr. Kaplan on Main Street.",
     "Dr. Kaplan said my teeth look fine.", "My dentist is Dr. Mehta at Smile Studio.",
     "The dentist sends reminders by text."),
    ("Kestrel", "What's the Kestrel release version?", "Kestrel is on version 2.3.",
     "Hotfix for Kestrel 2.3 went out smoothly.", "Kestrel is on version 3.0.", "Kestrel's standup moved to 10."),
    ("Leo", "What's Leo's school?", "Leo goes to Maple Elementary.", "Picked Leo up from Maple Elementary at 3.",
     "Leo goes to Cedar Middle School.", "Leo loves his science class."),
    ("wifi", "What's the office wifi password?", "The office wifi password is harbor2024.",
     "Gave the visitors the harbor2024 wifi password.", "The office wifi password is tidewater77.",
     "The office wifi is slow on Mondays."),
    ("Sam", "What's Sam's job?", "Sam works as a line cook at Rosso.", "Sam's shift at Rosso ran late again.",
     "Sam works as a nurse at the children's hospital.", "Sam adopted a rescue dog."),
    ("Nimbus", "What's the Nimbus on-call rotation?", "Nimbus on-call rotates every Monday.",
     "Monday handover for Nimbus on-call went fine.", "Nimbus on-call rotates every Thursday.",
     "Nimbus had zero incidents in May."),
    ("Grandpa", "What medication does Grandpa take?", "Grandpa takes warfarin every evening.",
     "Reminded Grandpa about his warfarin.", "Grandpa takes apixaban twice a day.",
     "Grandpa is teaching me chess."),
    ("Vega", "What's the Vega budget?", "The Vega budget is 200k for the year.",
     "Finance reviewed the 200k Vega budget.", "The Vega budget is 140k for the year.",
     "Vega's team grew to eight people."),
    ("Zoe", "What's Zoe's favourite food?", "Zoe's favourite food is sushi.", "Took Zoe out for sushi on Friday.",
     "Zoe's favourite food is Ethiopian, injera especially.", "Zoe is learning the guitar."),
    ("gym", "What are the gym's opening hours?", "The gym is open 6 am to 10 pm.",
     "Got to the gym at 6 am sharp.", "The gym is open 5 am to 11 pm.", "The gym has new rowing machines."),
    ("Titan", "Who is Titan's account manager?", "Titan's account manager is Steve.",
     "Steve sent the Titan renewal deck.", "Titan's account manager is Hana.", "Titan renewed for two years."),
    ("Ravi", "What car does Ravi drive?", "Ravi drives a silver Honda Civic.",
     "Ravi's Civic needed new tyres.", "Ravi drives a white Tesla Model 3.", "Ravi is a great cook."),
    ("nanny", "Who is the kids' nanny?", "The kids' nanny is Greta.", "Greta took the kids to the zoo.",
     "The kids' nanny is Paloma.", "The nanny agency sent the invoice."),
    ("Onyx", "What's the Onyx licence fee?", "Onyx costs 12 dollars per user.", "Renewed Onyx at 12 dollars a user.",
     "Onyx costs 15 dollars per user.", "Onyx released a mobile app."),
    ("Aunt May", "What's Aunt May's email?", "Aunt May's email is may.h@mailbox.org.",
     "Emailed Aunt May at may.h@mailbox.org.", "Aunt May's email is maybelle@fastmail.com.",
     "Aunt May is visiting in August."),
    ("Cobalt", "Which CI does Cobalt use?", "Cobalt builds on Jenkins.", "Jenkins was flaky for Cobalt again.",
     "Cobalt builds on GitHub Actions.", "Cobalt's test suite takes 12 minutes."),
    ("Hugo", "Who is Hugo's swim coach?", "Hugo's swim coach is Coach Barnes.", "Coach Barnes timed Hugo's laps.",
     "Hugo's swim coach is Ms. Adeyemi.", "Hugo got new goggles."),
    ("mortgage", "Which bank holds our mortgage?", "Our mortgage is with Chase.", "Paid the Chase mortgage statement.",
     "Our mortgage is with First Republic Credit Union.", "The mortgage paperwork is in the safe."),
    ("Cascade", "What's the Cascade status page URL?", "Cascade status is at status.cascade.io.",
     "Checked status.cascade.io during the outage.", "Cascade status is at cascade.statuspage.dev.",
     "Cascade hired two SREs."),
    ("Jordan", "What's Jordan's role?", "Jordan is a senior engineer.",
     "Jordan mentored the interns as senior engineer.", "Jordan is the engineering manager.",
     "Jordan got a new bike."),
    ("dry cleaner", "Which dry cleaner do we use?", "We use Pressed on Market Street.",
     "Dropped shirts at Pressed on Market.", "We use Lotus Cleaners by the gym.", "The dry cleaner lost a button once."),
    ("Polaris", "Where is Polaris hosted?", "Polaris is hosted in us-west-2.", "Polaris latency in us-west-2 is fine.",
     "Polaris is hosted in eu-central-1.", "Polaris got a new dashboard."),
    ("Lucia", "What's Lucia's shoe size?", "Lucia wears size 31 shoes.", "Bought Lucia size 31 sandals.",
     "Lucia wears size 33 shoes.", "Lucia is in the school choir."),
    ("Andromeda", "When does the Andromeda lease end?", "The Andromeda lease ends in March.",
     "Andromeda's March lease end came up at the board.", "The Andromeda lease ends in September.",
     "Andromeda moved desks again."),
    ("Oscar", "What's Oscar's bedtime?", "Oscar's bedtime is 7:30.", "Oscar was asleep by 7:30 again.",
     "Oscar's bedtime is 8:15.", "Oscar loves dinosaur books."),
    ("Falcon", "Who is the Falcon tech lead?", "The Falcon tech lead is Oskar.", "Oskar reviewed the Falcon design.",
     "The Falcon tech lead is Mei.", "Falcon's code review guide is in the wiki."),
    ("Ingrid", "What's Ingrid's wifi password?", "Ingrid's wifi password is fjord123.",
     "Used Ingrid's fjord123 wifi during the visit.", "Ingrid's wifi password is aurora456.",
     "Ingrid bakes amazing bread."),
    ("groomer", "Which groomer does the dog go to?", "The dog goes to Paws & Suds.",
     "Paws & Suds trimmed the dog's nails.", "The dog goes to Fluffy Cuts on 3rd.",
     "The groomer sends photos after each visit."),
    ("Gemini", "What's the Gemini test environment URL?", "Gemini test is at test.gemini.local.",
     "Ran the smoke tests on test.gemini.local.", "Gemini test is at gem-qa.internal.",
     "Gemini test has seeded accounts."),
    ("Aunt Lena", "Where does Aunt Lena work?", "Aunt Lena works at the bank downtown.",
     "Aunt Lena told bank stories at lunch.", "Aunt Lena works at the city library.", "Aunt Lena knits scarves."),
    ("Summit", "What's the Summit sprint length?", "Summit runs two-week sprints.",
     "Summit closed another two-week sprint.", "Summit runs one-week sprints.",
     "Summit's board has many open tickets."),
    ("Tessa", "What's Tessa's favourite colour?", "Tessa's favourite colour is purple.",
     "Got Tessa a purple scarf.", "Tessa's favourite colour is teal.", "Tessa is learning to swim."),
    ("Harbor", "What's the Harbor API rate limit?", "The Harbor API allows 500 requests a minute.",
     "Harbor throttled us at 500 a minute.", "The Harbor API allows 2,000 requests a minute.",
     "Harbor's docs got a redesign."),
)

# (constraint, cue, distractor, distractor, distractor): no content word shared with the cue
TRAP_CONSTRAINTS: tuple[tuple[str, str, str, str, str], ...] = (
    ("Theo is allergic to penicillin; it's on his chart at St. Luke's.",
     "What antibiotic should the boy get for an earache?",
     "The earache kept him up all night.", "The boy has a fever again.", "Antibiotics are in the cabinet."),
    ("Under the settlement with Norcross we may not contact their clients for two years.",
     "Email the customers of our old competitor about the new plan.",
     "Our old competitor lost a big deal.", "The new plan launches next week.", "Customers loved the email."),
    ("Fiona can't climb stairs since the hip operation.",
     "Find an Airbnb in Porto for the whole family.",
     "Porto has lovely Airbnbs by the river.", "The whole family wants to go in May.",
     "Airbnb prices went up this summer."),
    ("Never use the corporate card for personal expenses, even temporarily.",
     "Grab me a coffee and a sandwich on the Amex.",
     "The sandwich place has a new menu.", "Coffee machine is broken again.", "Amex sent the statement."),
    ("Encryption keys live only in the HSM; nobody copies them to disk.",
     "Save the signing secret to a file so the build bot can read it.",
     "The build bot failed on the signing step.", "The file server is slow today.",
     "Secret Santa list is out."),
    ("Jonah is terrified of dogs after the bite in 2023.",
     "Plan a visit to the animal shelter with the boys.",
     "The animal shelter has an open day.", "The boys want to volunteer somewhere.", "Visit schedule is flexible."),
    ("Our HOA bans anything on the balcony railing.",
     "Hang the flower boxes outside the living room window.",
     "The flower boxes arrived today.", "The living room window gets afternoon sun.",
     "Hanging planters look great."),
    ("Export controls: no Helix source code leaves the US.",
     "Give the Bangalore contractors access to the repository.",
     "The Bangalore contractors start Monday.", "Repository access requests pile up.", "Contractors need laptops."),
    ("I'm pregnant; no raw fish, soft cheese or alcohol for now.",
     "Book the sushi and sake tasting for Friday.",
     "The sake tasting menu looks amazing.", "Friday night is free.", "Sushi place has a new chef."),
    ("The fire code caps the loft at 40 people.",
     "Invite the whole department to the party upstairs.",
     "The whole department is excited for the party.", "Upstairs was just repainted.",
     "Party playlist is ready."),
    ("Marta works nights; never call her before 2 pm.",
     "Ring my sister first thing tomorrow about the move.",
     "The move is on the 20th.", "Tomorrow morning is busy.", "My sister found boxes."),
    ("All PII in logs must be masked before it leaves production.",
     "Ship the raw request dumps to the analytics vendor.",
     "The analytics vendor sent a proposal.", "Request dumps are huge this week.",
     "Raw data exports finished."),
    ("The boiler must be serviced before anyone touches the thermostat settings.",
     "Turn the heat up to 24 in the kids' rooms.",
     "The kids' rooms are freezing.", "Heat wave is over.", "Kids are asleep."),
    ("Bruno is on a kidney diet: no bananas, potatoes or tomatoes.",
     "Make a smoothie for the boy after football.",
     "Football practice ran late.", "The boy was starving after the game.", "Smoothie blender is clean."),
    ("We never negotiate salaries over email; only in a call with HR present.",
     "Reply to Jamal's message about his raise.",
     "Jamal's message came in last night.", "Raises are announced in March.", "Reply templates are in the wiki."),
    ("Stefan is recovering from alcoholism; no bars when he comes along.",
     "Find a pub for the Thursday team outing.",
     "Thursday's outing is after the demo.", "The pub near the office has trivia night.",
     "Team outing budget approved."),
    ("The dog must never be left alone more than four hours; separation anxiety.",
     "Plan a full day trip to the coast on Saturday.",
     "The coast is beautiful this time of year.", "Saturday weather looks sunny.", "Day trip snacks packed."),
    ("Production credentials rotate only through Vault; never edit them by hand.",
     "Change the database password in the config file quickly.",
     "The config file is a mess.", "Database is running hot.", "Password manager subscription renewed."),
    ("Agnes only travels with her oxygen concentrator, so flights need a medical form.",
     "Buy Grandma a plane ticket to visit us at Christmas.",
     "Christmas plans are coming together.", "Plane tickets are cheap in November.", "Grandma loves visiting."),
    ("Licence rule: GPL sources must never be mixed in.",
     "Paste that tokenizer from the Linux kernel into our library.",
     "Our library needs a faster tokenizer.", "The Linux kernel release is out.", "Paste bin links expired."),
    ("Hector has epilepsy; flashing lights can trigger seizures.",
     "Rent a strobe machine for the dance party.",
     "The dance party playlist is fire.", "Rental shop opens at nine.", "Party decorations arrived."),
    ("Interns may not approve their own code changes.",
     "Let the summer student merge her feature branch.",
     "The summer student finished her feature.", "Feature branch builds are green.", "Merge conflicts resolved."),
    ("The wooden floors can't get wet; only a dry mop on them.",
     "Steam clean the hallway before the guests come.",
     "Guests arrive at seven.", "The hallway looks dusty.", "Steam cleaner is in the garage."),
    ("No photos of the factory floor may be published; trade secrets.",
     "Post the behind-the-scenes shots from the plant tour on LinkedIn.",
     "The plant tour was fascinating.", "LinkedIn post got many likes.", "Behind-the-scenes video is edited."),
    ("Colette's cochlear implant means no magnetic resonance imaging, ever.",
     "Book my daughter the scan the neurologist recommended.",
     "The neurologist was very kind.", "My daughter had a headache again.", "Scan results take a week."),
    ("Trading window: employees can't trade equity in the fortnight before earnings.",
     "Sell 200 of my company shares tomorrow.",
     "Company shares are up this week.", "Tomorrow is busy with meetings.", "Shares in tech fell."),
    ("We keep the twins on separate routines; never in the tub at once.",
     "Give the little ones their bath together tonight to save time.",
     "Bath toys are everywhere.", "The little ones are tired tonight.", "Saving time at bedtime helps."),
    ("Raj keeps halal; nothing with pork or gelatin for him.",
     "Bring gummy bears and ham sandwiches for the road trip.",
     "The road trip starts at six.", "Gummy bears are the best snack.", "Sandwiches are in the cooler."),
    ("The bridge on Mill Road can't take vehicles over 3.5 tonnes.",
     "Route the delivery truck the shortest way to the farm.",
     "The delivery truck is running late.", "The farm is 20 minutes out.", "Shortest routes save fuel."),
    ("Desmond must never sit beside his ex-wife at family gatherings.",
     "Make the seating chart for the wedding reception.",
     "The wedding reception is at the vineyard.", "Seating charts are a nightmare.",
     "Reception menu is chosen."),
    ("Under GDPR we delete applicant CVs after six months.",
     "Dig up the resumes from last year's hiring round.",
     "Last year's hiring round was huge.", "The resumes folder is messy.", "Hiring round starts again."),
    ("Wendy is a recovering gambler; don't bring her to casinos or betting events.",
     "Get tickets for the horse races for our group.",
     "The horse races are next Saturday.", "Our group chat is planning the weekend.", "Tickets sell out fast."),
    ("Lithium batteries can't go in checked luggage.",
     "Pack the spare power banks in the big suitcase.",
     "The big suitcase is almost full.", "Spare power banks are charged.", "Packing list is done."),
    ("Medical data must stay inside the hospital network at all times.",
     "Upload the patient scans to my Dropbox so I can review them at home.",
     "Patient scans are ready for review.", "Dropbox is almost full.", "Reviewing at home is easier."),
    ("Yvonne has celiac disease; her food can't touch anything with wheat.",
     "Order the bread basket and pasta for everyone at the reunion.",
     "The reunion is at the Italian place.", "The bread basket there is famous.", "Pasta night was fun."),
    ("The old oak is protected; no cutting without a council permit.",
     "Have the gardener trim the big tree back this weekend.",
     "The gardener comes on Saturday.", "The big tree drops so many leaves.", "Trimming the hedges took hours."),
    ("Never leave the garage door open; the neighbourhood had break-ins.",
     "Air out the workshop overnight while the paint dries.",
     "The paint is drying slowly.", "The workshop smells of varnish.", "Overnight temperatures are mild."),
    ("Tobias has a pacemaker; keep magnets and induction hobs away from him.",
     "Show my father-in-law the new kitchen stove up close.",
     "The new kitchen stove is gorgeous.", "My father-in-law arrives Sunday.", "Stove installation is done."),
    ("Our sales contracts require 30 days' notice before any price change.",
     "Raise the subscription fee for all accounts starting Monday.",
     "The subscription fee hasn't changed in years.", "Accounts team meets Monday.", "Fee structures are confusing."),
    ("Renee is deaf in her left ear; sit on her right.",
     "Arrange the places at the dinner with my boss.",
     "The dinner with my boss is on Thursday.", "Places at the restaurant are limited.",
     "My boss picked the restaurant."),
)


def _pick(rng: np.random.Generator, pool: tuple[str, ...], count: int) -> list[str]:
    return [pool[j] for j in rng.choice(len(pool), size=count, replace=False)]


def trap_scenarios(seed: int = 38) -> list[dict[str, Any]]:
    """The trap templates as plain dicts (:class:`~fieldrank.evaluation._memory_suite.Scenario`'s
    fields; memories carry ``key``, ``text``, ``age_days``, ``importance`` and ``add`` keywords).

    Deterministic for a seed; the agent-life benchmark turns ages into times.
    """
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []
    for i, (cue, phrase, target, entities) in enumerate(TRAP_SALIENT):
        key = f"te{i}"
        memories = [{"key": f"{key}_right", "text": target, "age_days": float(rng.uniform(20, 200)),
                     "importance": 0.4, "entities": list(entities)}]
        people = _pick(rng, PEOPLE, 6)
        for j, pattern in enumerate(_pick(rng, SALIENT_PATTERNS, 6)):
            text = pattern.format(n=people[j], p=phrase, m=MONTHS[int(rng.integers(12))])
            salient = j < 3
            memories.append({
                "key": f"{key}_s{j}", "text": text, "age_days": float(rng.uniform(2, 300)),
                "importance": float(rng.uniform(0.75, 0.95)) if salient else float(rng.uniform(0.3, 0.6)),
                "valence": float(rng.choice((-0.9, 0.85))) if salient else float(rng.uniform(-0.6, 0.6)),
                "entities": [people[j]] if "{n}" in pattern else []})
        out.append({"case": "te", "key": key, "cue": cue, "memories": memories, "relevant": f"{key}_right",
                    "distractors": tuple(m["key"] for m in memories[1:])})
    for i, (cue, topic, rule) in enumerate(TRAP_RULES):
        key = f"tb{i}"
        memories = [{"key": f"{key}_rule", "text": rule, "age_days": float(rng.uniform(45, 330)),
                     "importance": float(rng.uniform(0.75, 0.9)),
                     "tier": "core" if rng.random() < 0.3 else "semantic", "entities": []}]
        people = _pick(rng, PEOPLE, 4)
        for j, pattern in enumerate(_pick(rng, CHATTER_PATTERNS, 4)):
            memories.append({"key": f"{key}_c{j}", "text": pattern.format(t=topic, n=people[j],
                                                                          m=MONTHS[int(rng.integers(12))]),
                             "age_days": float(rng.uniform(0.5, 21)), "importance": float(rng.uniform(0.15, 0.45)),
                             "entities": [people[j]] if "{n}" in pattern else []})
        out.append({"case": "tb", "key": key, "cue": cue, "memories": memories, "relevant": f"{key}_rule",
                    "protected": (f"{key}_rule",), "distractors": tuple(m["key"] for m in memories[1:])})
    for i, (entity, cue, stale, echo, current, neighbour) in enumerate(TRAP_STALE):
        key = f"td{i}"
        memories = [
            {"key": f"{key}_stale", "text": stale, "age_days": float(rng.uniform(240, 330)), "importance": 0.5,
             "entities": [entity]},
            {"key": f"{key}_echo", "text": echo, "age_days": float(rng.uniform(150, 210)),
             "importance": float(rng.uniform(0.3, 0.5)), "entities": [entity]},
            {"key": f"{key}_current", "text": current, "age_days": float(rng.uniform(25, 90)), "importance": 0.5,
             "entities": [entity]},
            {"key": f"{key}_neighbour", "text": neighbour, "age_days": float(rng.uniform(5, 120)),
             "importance": 0.4, "entities": [entity]},
        ]
        out.append({"case": "td", "key": key, "cue": cue, "memories": memories, "relevant": f"{key}_current",
                    "distractors": (f"{key}_stale", f"{key}_echo", f"{key}_neighbour"), "stale": f"{key}_stale",
                    "cue_entities": (entity,)})
    for i, (constraint, cue, *chatter) in enumerate(TRAP_CONSTRAINTS):
        key = f"ta{i}"
        memories = [{"key": f"{key}_rule", "text": constraint, "age_days": float(rng.uniform(395, 730)),
                     "importance": float(rng.uniform(0.85, 0.95)), "tier": "core", "entities": []}]
        for j, text in enumerate(chatter):
            memories.append({"key": f"{key}_d{j}", "text": text, "age_days": float(rng.uniform(0.5, 10)),
                             "importance": float(rng.uniform(0.2, 0.4)), "entities": []})
        out.append({"case": "ta", "key": key, "cue": cue, "memories": memories, "relevant": f"{key}_rule",
                    "protected": (f"{key}_rule",), "distractors": tuple(m["key"] for m in memories[1:])})
    return out


def trap_texts(seed: int = 38) -> list[str]:
    """Every text of the trap families (cues and memories), unique, in first-seen order."""
    seen: dict[str, None] = {}
    for template in trap_scenarios(seed):
        seen.setdefault(template["cue"], None)
        for memory in template["memories"]:
            seen.setdefault(memory["text"], None)
    return list(seen)
