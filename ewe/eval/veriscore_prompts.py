"""VeriScore's prompt text (Song et al. 2024), kept verbatim as data: changing a word changes the metric.

Source: github.com/Yixiao-Song/VeriScore at commit 7dd3352dd1fb7b0192323b9eb8d0212c2bc9e21d:
prompt/extraction_non_qa_template.txt, prompt/verification_instruction_binary.txt,
data/demos/few_shot_examples.jsonl, and the system messages and task line of veriscore/claim_extractor.py
and veriscore/claim_verifier.py.
Only the text is taken; the code that uses it is ewe's own (veriscore_openai.py).
"""

SOURCE_COMMIT = "7dd3352dd1fb7b0192323b9eb8d0212c2bc9e21d"

# veriscore/claim_extractor.py: the system message of the prompting (API) extractor.
EXTRACTION_SYSTEM = (
    'You are a helpful assistant who can extract verifiable atomic claims from a piece of text. Each atomic fact '
    'should be verifiable against reliable external world knowledge (e.g., via Wikipedia)'
)

# prompt/extraction_non_qa_template.txt (identical to prompt/non_qa_template.txt); fields: snippet, sentence.
EXTRACTION_NON_QA_TEMPLATE = (
    'You are trying to verify how factual a piece of text is. To do so, you need to break down a sentence and '
    'extract as many fine-grained facts mentioned in the sentence as possible. Each of these fine-grained facts '
    'should be verifiable against reliable external world knowledge (e.g., via Wikipedia). Any story, personal '
    'experiences, hypotheticals (e.g., "would be" or subjunctive), subjective statements (e.g., opinions), '
    'suggestions, advice, instructions, and other such content should not be included in the list. Biographical, '
    'historical, scientific, and other such texts are not personal experiences or stories. You should extract '
    'verifiable facts from them. Each fact should also be describing either one single event (e.g., "Nvidia is '
    'founded in 1993 in Sunnyvale, California, U.S.") or single state (e.g., "UMass Amherst has existed for 161 '
    'years.") with necessary time and location information. Quotations should be extracted verbatim with the source '
    'when available. Listed references should be ignored.\n\nExtract fine-grained facts from the sentence marked '
    'between <SOS> and <EOS>. You should focus on the named entities and numbers in the sentence and extract '
    'relevant information from the sentence. Other sentences are only context for you to recover pronouns, definite '
    'phrases (e.g., "the victims" or "the pope"), and so on. Each fact should be understandable on its own and '
    'require no additional context. This means that all entities must be referred to by name but not pronoun. Use '
    "the name of entities rather than definite noun phrases (e.g., 'the teacher') whenever possible. If a definite "
    'noun phrase is used, be sure to add modifiers (e.g., a embedded clause, a prepositional phrase, etc.). Each '
    'fact must be situated within relevant temporal and location whenever needed. Keep each fact to one sentence '
    'with zero or at most one embedded clause. You do not need to justify what you extract.\n\n'
    'If there is no verifiable fact in the sentence, please write "No verifiable claim."\n\nHere are some examples:\n'
    '\nText: The sweet potato or sweetpotato (Ipomoea batatas) is a dicotyledonous plant that belongs to the '
    'bindweed or morning glory family, Convolvulaceae. <SOS>Its large, starchy, sweet-tasting tuberous roots are '
    'used as a root vegetable.<EOS> The young shoots and leaves are sometimes eaten as greens.\n'
    'Sentence to be focused on: Its large, starchy, sweet-tasting tuberous roots are used as a root vegetable.\n'
    "Facts:\n- Sweet potatoes' roots are large.\n- Sweet potatoes' roots are starchy.\n"
    "- Sweet potatoes' roots are sweet-tasting.\n- Sweet potatoes' roots are tuberous.\n"
    "- Sweet potatoes' roots are used as a root vegetable.\n\nText: <SOS>After the success of the David in 1504, "
    'Michelangelo’s work consisted almost entirely of vast projects.<EOS> He was attracted to these ambitious tasks '
    'while at the same time rejecting the use of assistants, so that most of these projects were impractical and '
    'remained unfinished.\nSentence to be focused on: After the success of the David in 1504, Michelangelo’s work '
    'consisted almost entirely of vast projects.\nFacts:\n- Michelangelo achieved the success of the David in 1504.\n'
    '- After 1504, Michelangelo’s work consisted almost entirely of vast projects.\n\n'
    'Text: After the success of the David in 1504, Michelangelo’s work consisted almost entirely of vast projects. '
    'He was attracted to these ambitious tasks while at the same time rejecting the use of assistants, so that most '
    'of these projects were impractical and remained unfinished. <SOS>In 1504 he agreed to paint a huge fresco for '
    'the Sala del Gran Consiglio of the Florence city hall to form a pair with another just begun by Leonardo da '
    'Vinci.<EOS> Both murals recorded military victories by the city (Michelangelo’s was the Battle of Cascina), but '
    'each also gave testimony to the special skills of the city’s much vaunted artists.\n'
    'Sentence to be focused on: In 1504 he agreed to paint a huge fresco for the Sala del Gran Consiglio of the '
    'Florence city hall to form a pair with another just begun by Leonardo da Vinci.\nFacts:\n'
    '- In 1504, Michelangelo agreed to paint a huge fresco for the Sala del Gran Consiglio of the Florence city '
    'hall.\n- Around 1504, Leonardo da Vinci just began with a mural for the Florence city hall.\n\n'
    'Text: After the success of the David in 1504, Michelangelo’s work consisted almost entirely of vast projects. '
    'He was attracted to these ambitious tasks while at the same time rejecting the use of assistants, so that most '
    'of these projects were impractical and remained unfinished. In 1504 he agreed to paint a huge fresco for the '
    'Sala del Gran Consiglio of the Florence city hall to form a pair with another just begun by Leonardo da Vinci. '
    '<SOS>Both murals recorded military victories by the city (Michelangelo’s was the Battle of Cascina), but each '
    'also gave testimony to the special skills of the city’s much vaunted artists.<EOS> Leonardo’s design shows '
    'galloping horses, Michelangelo’s active nudes—soldiers stop swimming and climb out of a river to answer an '
    'alarm.\nSentence to be focused on: Both murals recorded military victories by the city (Michelangelo’s was the '
    'Battle of Cascina), but each also gave testimony to the special skills of the city’s much vaunted artists.\n'
    'Facts:\n- Michelangelo’s murals for the Florence city hall recorded military victories by the city.\n'
    '- Leonardo da Vinci’s murals for the Florence city hall recorded military victories by the city.\n'
    '- Michelangelo’s mural for the Florence city hall was the Battle of Cascina.\n\n'
    'Text: I (27f) and my fiance "Leo" (27m) decided to let my FSIL "Maya" (32f) stay at our house because she '
    "needed space from her husband due to some relationship struggles they're having. Leo and I had gotten wedding "
    'cake samples from an expensive bakery specializing in wedding cakes. We planned to test them along with Maya '
    'after we finished up some other wedding plans yesterday. <SOS>However, when I came home from work to see Leo '
    'yelling at Maya, the box the samples came in wide open on the living room table, and Maya arguing with '
    'him.<EOS> I asked what was happening, and Leo angrily told me that while we were both at work, Maya had some '
    'friends over and they ended up eating almost all of our cake samples.\nSentence to be focused on: However, when '
    'I came home from work to see Leo yelling at Maya, the box the samples came in wide open on the living room '
    'table, and Maya arguing with him.\nFacts:\nNo verifiable claim.\n\nText: I was a catholic school kid, educated '
    'by nuns and somehow on a spring day in 1972, I was called down to the principal’s office by Sister Mary '
    'Roberts, who informed me that I had gained admission to Stuyvesant High School. <SOS>I was excited to be '
    'freshman in one of New York City’s elite public schools but soon came to realize that my catholic school '
    'education did not provide the groundwork for abstract concepts like science and algebra.<EOS> My parochial '
    'education in Science at St. Joseph’s was essentially “God made it, what else do you need to know?”\n'
    'Sentence to be focused on: I was excited to be freshman in one of New York City’s elite public schools but soon '
    'came to realize that my catholic school education did not provide the groundwork for abstract concepts like '
    'science and algebra.\nFacts:\n- Stuyvesant High School is in New York City.\n'
    '- Stuyvesant High School is an elite high school.\n- Stuyvesant High School is a public school.\n'
    "- In 1972, St. Joseph's catholic school education did not provide the groundwork for abstract concepts like "
    'science and algebra.\n\nText: <SOS>Major depressive disorder (MDD), also known as depression, is a mental '
    'disorder.<EOS>\nSentence to be focused on: Major depressive disorder (MDD), also known as depression, is a '
    'mental disorder.\nFacts:\n- Major depressive disorder is also known as depression.\n'
    '- Major depressive disorder is a mental disorder.\n\nText: The 1937 Fox vault fire was a major fire in a 20th '
    'Century Fox film storage facility in Little Ferry, New Jersey on 9 July 1937. It was caused by the spontaneous '
    'combustion of nitrate film stored in inadequately-ventilated vaults. The fire resulted in one death and two '
    'injuries, and destroyed all of the film present. <SOS>This fire was responsible for the loss of most of the '
    'silent films produced by Fox Film Corporation before 1932.<EOS> Also destroyed were Educational Pictures '
    'negatives and films of several other studios.\nSentence to be focused on: This fire was responsible for the '
    'loss of most of the silent films produced by Fox Film Corporation before 1932.\nFacts:\n'
    '- Fox Film Corporation produced silent films before 1932.\n- The 1937 Fox vault fire caused the loss of most of '
    'the silent films produced by Fox Film Corporation before 1932.\n\nText: <SOS>Garnett had spent well over a '
    'decade with the Minnesota Timberwolves, and while he stayed loyal to that team, he found little success '
    'there.<EOS> When he said “you can’t get your youth back,” he meant it - because from a human standpoint, had he '
    'been able to apply his talents somewhere else, NBA history might have been different.\n'
    'Sentence to be focused on:  Garnett had spent well over a decade with the Minnesota Timberwolves, and while he '
    'stayed loyal to that team, he found little success there.\nFacts:\n- Kevin Garnett spent over a decade with the '
    'Minnesota Timberwolves.\n- Kevin Garnett was loyal to the Minnesota Timberwolves.\n'
    '- Kevin Garnett found little success with the Minnesota Timberwolves.\n\n'
    'Text: Garnett had spent well over a decade with the Minnesota Timberwolves, and while he stayed loyal to that '
    'team, he found little success there. <SOS>When he said “you can’t get your youth back,” he meant it - because '
    'from a human standpoint, had he been able to apply his talents somewhere else, NBA history might have been '
    'different.<EOS>\nSentence to be focused on: When he said “you can’t get your youth back,” he meant it - because '
    'from a human standpoint, had he been able to apply his talents somewhere else, NBA history might have been '
    'different.\nFacts:\n- Kevin Garnett said "you can’t get your youth back."\n\n'
    'Text: Unity. Unity. In another January in Washington, on New Year’s Day 1863, Abraham Lincoln signed the '
    'Emancipation Proclamation. <SOS>When he put pen to paper, the President said, “If my name ever goes down into '
    'history it will be for this act and my whole soul is in it.”<EOS> My whole soul is in it.\n'
    'Sentence to be focused on: When he put pen to paper, the President said, “If my name ever goes down into '
    'history it will be for this act and my whole soul is in it.”\nFacts:\n- On New Year’s Day 1863, Abraham Lincoln '
    'said, “If my name ever goes down into history it will be for this act and my whole soul is in it.”\n\n'
    'Text: Ãcariya Mun related the story of a dhutanga monk (ascetic monk) who inadvertently went to stay in a '
    'forest located next to a charnel ground. He arrived on foot at a certain village late one afternoon and, being '
    'unfamiliar with the area, asked the villagers where he could find a wooded area suitable for meditation. They '
    'pointed to a tract of forest, claiming it was suitable, but neglected to tell him that it was situated right on '
    'the edge of a charnel ground. <SOS>They then guided him to the forest, where he passed the first night '
    'peacefully.<EOS> On the following day he saw the villagers pass by carrying a corpse, which they soon cremated '
    'only a short distance from where he was staying.\nSentence to be focused on: They then guided him to the '
    'forest, where he passed the first night peacefully.\nFacts:\nNo verifiable claim.\n\n'
    'Text: <SOS>The sweet potato or sweetpotato (Ipomoea batatas) is a dicotyledonous plant that belongs to the '
    'bindweed or morning glory family, Convolvulaceae.<EOS> Its large, starchy, sweet-tasting tuberous roots are '
    'used as a root vegetable. The young shoots and leaves are sometimes eaten as greens.\n'
    'Sentence to be focused on: The sweet potato or sweetpotato (Ipomoea batatas) is a dicotyledonous plant that '
    'belongs to the bindweed or morning glory family, Convolvulaceae.\nFacts:\n'
    '- The scientific name of sweet potatoes is Ipomoea batatas.\n- Sweet potatoes are dicotyledonous plants.\n'
    '- Sweet potatoes belong to the bindweed or morning glory family, Convolvulaceae.\n\n'
    'Text: Pope Julius had an ambitious imagination, parallel to Michelangelo’s, but because of other projects, such '
    'as the new building of St. Peter’s and his military campaigns, he evidently became disturbed soon by the cost. '
    'Michelangelo believed that Bramante, the equally prestigious architect at St. Peter’s, had influenced the pope '
    'to cut off his funds. He left Rome, but the pope brought pressure on the city authorities of Florence to send '
    'him back. <SOS>He was put to work on a colossal bronze statue of the pope in his newly conquered city of '
    'Bologna (which the citizens pulled down soon after when they drove the papal army out) and then on the less '
    'expensive project of painting the ceiling of the Sistine Chapel (1508–12).<EOS>\n'
    'Sentence to be focused on: He was put to work on a colossal bronze statue of the pope in his newly conquered '
    'city of Bologna (which the citizens pulled down soon after when they drove the papal army out) and then on the '
    'less expensive project of painting the ceiling of the Sistine Chapel (1508–12).\nFacts:\n'
    '- Michelangelo was put to work on a colossal bronze statue of Pope Julius II.\n'
    '- The city of Bologna was once conquered by Pope Julius II.\n- The colossal bronze statue of Pope Julius II was '
    'put in Bologna.\n- The papal army was driven out of Bologna.\n- The citizens of the Bologna pulled down the '
    'bronze statue of Pope Julius II after they drove the papal army out.\n'
    '- Michelangelo worked on painting the ceiling of the Sistine Chapel from 1508 to 1512.\n\n'
    'Extract *verifiable atomic* facts.\n\nText: {snippet}\nSentence to be focused on: {sentence}\nFacts:'
)

# veriscore/claim_verifier.py: the system message for binary labels (label_n=2).
VERIFICATION_SYSTEM = (
    'You are a helpful assistant who can judge whether a claim is supported by the search results or not.'
)

# prompt/verification_instruction_binary.txt: nine (claim, search results, label) slots for VERIFICATION_DEMOS.
VERIFICATION_INSTRUCTION_BINARY = (
    'You need to judge whether a claim is supported or not by Google search results. When doing the task, take into '
    'consideration whether the link of the search result is of a trustworthy source. Mark your answer with ### '
    'signs.\n\nBelow are the definitions of the three categories:\n\nSupported: A claim is supported by the search '
    'results if everything in the claim is supported and nothing is contradicted by the search results. There can be '
    'some search results that are not fully related to the claim.\nUnsupported: If a claim is not supported by the '
    'search results, mark it as unsupported.\n\nHere are some examples:\n\nClaim: {}\n\n{}\n\n'
    'Your decision: ###{}###\n\nClaim: {}\n\n{}\n\nYour decision: ###{}###\n\nClaim: {}\n\n{}\n\n'
    'Your decision: ###{}###\n\nClaim: {}\n\n{}\n\nYour decision: ###{}###\n\nClaim: {}\n\n{}\n\n'
    'Your decision: ###{}###\n\nClaim: {}\n\n{}\n\nYour decision: ###{}###\n\nClaim: {}\n\n{}\n\n'
    'Your decision: ###{}###\n\nClaim: {}\n\n{}\n\nYour decision: ###{}###\n\nClaim: {}\n\n{}\n\n'
    'Your decision: ###{}###'
)

# veriscore/claim_verifier.py: what follows the demonstrations (non-Claude models).
VERIFICATION_TASK = "Your task:\n\nClaim: {claim}\n\n{search_results}\n\nYour decision:"

# data/demos/few_shot_examples.jsonl: (claim, search_result, human_label), in the file's order.
VERIFICATION_DEMOS = (
    (
        (
            'Characters Lenny and Carl on The Simpsons are hearing but are depicted as close friends of the Simpsons '
            'family.'
        ),
        (
            'Search result 1\nTitle: Character Spotlight: Lenny Leonard and Carl Carlson (& Barflies)\n'
            'Content: Their friendship is a pretty singular aspect on the show -- save Bart and Milhouse (or to some '
            'degree, Mr. Burns and Smithers) -- they always ...\n'
            'Link: '
            'https://nohomers.net/forums/index.php?threads/character-spotlight-lenny-leonard-and-carl-carlson-barflie'
            "s.23798/\n\nSearch result 2\nTitle: The Simpsons: Lenny and Carl's History, Explained - CBR\n"
            "Content: Introduced in the show's first season, the pair were portrayed as background characters at "
            "Homer's work, usually appearing together in minor ...\n"
            'Link: https://www.cbr.com/the-simpsons-lenny-carl-history-explained/\n\nSearch result 3\n'
            "Title: Are Lennie and Carl Homer Simpson's real or fake friends? - Quora\n"
            "Content: Lenni is a pal, Carl doesn't consider any of them to be 'friends' they're just shallow guys he "
            'hangs out with. Lenny and Carl have a special ...\n'
            'Link: https://www.quora.com/Are-Lennie-and-Carl-Homer-Simpson-s-real-or-fake-friends\n\n'
            "Search result 4\nTitle: [The Simpsons] Lenny and Carl aren't ambiguously gay (originally)\n"
            'Content: Theory: Lenny and Carl started out as a parody of background characters who always appear as a '
            'pair: Crabbe and Goyle or Fred and George in " ...\n'
            'Link: '
            'https://www.reddit.com/r/FanTheories/comments/yw7bp4/the_simpsons_lenny_and_carl_arent_ambiguously_gay/'
            '\n\nSearch result 5\nTitle: Lenny Leonard | Simpsons Wiki | Fandom\n'
            'Content: He is the best friend of Carl Carlson and, along with Carl, second best friend of Homer '
            'Simpson, behind Barney Gumble and Moe Syzslak.\nLink: https://simpsons.fandom.com/wiki/Lenny_Leonard\n\n'
            "Search result 6\nTitle: Are Simpsons' Carl & Lenny Gay? Every Clue To Their Relationship\n"
            "Content: One of The Simpsons' many mysteries is Lenny and Carl's relationship, as it has been hinted "
            'that the two are more than just best friends.\n'
            'Link: https://screenrant.com/simpsons-shows-carl-lenny-gay-couple-clues-hints/\n\nSearch result 7\n'
            'Title: Lenny Leonard - Wikisimpsons, the Simpsons Wiki\nContent: Lenford "Lenny" Leonard is the best '
            'friend of Carl Carlson and, along with Carl, second best friend of Homer Simpson, behind Barney '
            'Gumble.\nLink: https://simpsonswiki.com/wiki/Lenny_Leonard\n\nSearch result 8\n'
            'Title: Lenny | The Simpsons: Tapped Out Wiki | Fandom\nContent: Lenford "Lenny" Leonard MPhs (born '
            '1960) is the best friend of Carl Carlson and, along with Carl, second best friend of Homer Simpson, '
            'behind Barney Gumble.\nLink: https://simpsonstappedout.fandom.com/wiki/Lenny\n\nSearch result 9\n'
            'Title: The Simpsons - Wikipedia\nContent: Developed by Groening, James L. Brooks, and Sam Simon, the '
            'series is a satirical depiction of American life, epitomized by the Simpson family, which consists of '
            '...\nLink: https://en.wikipedia.org/wiki/The_Simpsons\n\nSearch result 10\n'
            'Title: Lenny Leonard & Carl Carlson - Friends or Couple? | The Simpsons\n'
            'Content: Embark on an Epic Friendship Adventure: Lenny Leonard and Carl Carlson from The Simpsons ...\n'
            'Link: https://www.youtube.com/watch?v=qY5hjalUhfA'
        ),
        'Inconclusive.',
    ),
    (
        (
            'The championship match of the FIFA World Cup 2026 will be hosted by the United States.'
        ),
        (
            'Search result 1\nTitle: World Cup 2026 | New York New Jersey to host final - FIFA\n'
            'Content: New York New Jersey Stadium has been confirmed as the location for the FIFA World Cup 26™ '
            'final on Sunday, 19 July 2026. The full match schedule for the ...\n'
            'Link: '
            'https://www.fifa.com/fifaplus/en/tournaments/mens/worldcup/canadamexicousa2026/articles/new-york-new-jer'
            'sey-stadium-host-world-cup-2026-final\n\nSearch result 2\nTitle: 2026 FIFA World Cup - Wikipedia\n'
            'Content: The tournament will take place from June 11 to July 19, 2026. It will be jointly hosted by 16 '
            'cities in three North American countries: Canada, Mexico, and the ...\n'
            'Link: https://en.wikipedia.org/wiki/2026_FIFA_World_Cup\n\nSearch result 3\n'
            'Title: World Cup 2026 | Dallas to host nine matches - FIFA\n'
            'Content: Dallas Stadium will host nine matches from the FIFA World Cup 26™, including four knockout '
            'games in the latter stages of the tournament.\n'
            'Link: '
            'https://www.fifa.com/fifaplus/en/tournaments/mens/worldcup/canadamexicousa2026/articles/dallas-stadium-h'
            'ost-nine-world-cup-matches\n\nSearch result 4\nTitle: When and where is the 2026 World Cup? What is the '
            'format?\nContent: 104 games will take place in the 2026 World Cup across the USA, Mexico, and Canada '
            'with 16 different host cities selected and the schedule confirmed.\n'
            'Link: https://www.nbcsports.com/soccer/news/when-and-where-is-the-2026-world-cup\n\nSearch result 5\n'
            'Title: New York/New Jersey will host 2026 FIFA World Cup final\n'
            'Content: FIFA announced on Sunday that the final of the 2026 World Cup will be held at MetLife Stadium '
            'just outside New York.\n'
            'Link: '
            'https://www.foxsports.com/stories/soccer/new-york-new-jersey-will-host-2026-fifa-world-cup-final-mexico-'
            'city-gets-the-opener\n\nSearch result 6\nTitle: FIFA announces 2026 World Cup details, including host '
            'stadium for ...\nContent: The tournament will be hosted by the United States, Mexico and Canada. PHOTO: '
            'A general exterior view of the MetLife Stadium the home of NFL New ...\n'
            'Link: '
            'https://abcnews.go.com/Sports/new-jersey-metlife-stadium-host-2026-world-cup-final/story?id=106937005\n'
            '\nSearch result 7\nTitle: New York, New Jersey to host 2026 FIFA World Cup final - France 24\n'
            'Content: The 2026 World Cup final will be held at MetLife Stadium in New York/New Jersey, organisers '
            'FIFA announced on Sunday.\n'
            'Link: '
            'https://www.france24.com/en/americas/20240204-new-york-new-jersey-to-host-2026-fifa-world-cup-final\n\n'
            'Search result 8\nTitle: 2026 World Cup final will be played at MetLife Stadium in New Jersey\n'
            'Content: The 2026 World Cup final will be played at MetLife Stadium in New Jersey, beating out Texas '
            "and California for soccer's showcase game.\n"
            'Link: '
            'https://www.nbcmiami.com/news/sports/miami-misses-out-on-hosting-the-2026-fifa-world-cup-final-metlife-s'
            "tadium-in-new-jersey-to-host/3224690/\n\nSearch result 9\nTitle: New Jersey's MetLife Stadium to host "
            '2026 FIFA World Cup final on ...\nContent: The 104-match tournament will open in Mexico on June 11 and '
            'will move entirely to the US from the quarterfinal round. MetLife Stadium in East ...\n'
            'Link: https://www.aljazeera.com/sports/2024/2/5/new-jersey-to-host-2026-fifa-world-cup-final\n\n'
            'Search result 10\nTitle: World Cup 2026 | Seattle to host six matches - FIFA\n'
            "Content: Seattle Stadium will host six matches from the FIFA World Cup 26™, including USA's second "
            'group fixture and two knockout games. The full match schedule for ...\n'
            'Link: '
            'https://www.fifa.com/fifaplus/en/tournaments/mens/worldcup/canadamexicousa2026/articles/seattle-host-six'
            '-matches-stadium'
        ),
        'Supported.',
    ),
    (
        (
            'It is essential to understand the limitations of heating a dead battery to temporarily revive its '
            'function.'
        ),
        (
            'Search result 1\nTitle: Why do batteries come back to life if you let them rest?\n'
            'Content: By letting the battery rest, you give the reaction products a chance to dissipate. The higher '
            'the drain on the battery, the faster the products ...\n'
            'Link: https://electronics.howstuffworks.com/everyday-tech/question390.htm\n\nSearch result 2\n'
            'Title: ELI5 Why do batteries work again after heating them up? - Reddit\n'
            'Content: The warmth heats up the battery and give it a little more juice allowing me to use it again '
            'for a minute.\n'
            'Link: '
            'https://www.reddit.com/r/explainlikeimfive/comments/vjn30b/eli5_why_do_batteries_work_again_after_heatin'
            'g/\n\nSearch result 3\nTitle: What happen when a dead battery and a good battery connected in ...\n'
            'Content: The batteries could get warm/hot/overheat and or get damaged depending on the capacity of the '
            'batteries being connected and their ability to ...\n'
            'Link: https://www.quora.com/What-happen-when-a-dead-battery-and-a-good-battery-connected-in-parallel\n\n'
            'Search result 4\nTitle: The flat battery vs dead battery - key differences and how to handle t ...\n'
            'Content: A flat battery is temporarily depleted but can be recharged and regain its functionality. ... '
            'its ability to hold a charge and cannot be revived.\n'
            'Link: https://www.tycorun.com/blogs/news/flat-battery-vs-dead-battery\n\nSearch result 5\n'
            'Title: How to Bring Back 0V/low voltage NiMH Battery to Life – EBLOfficial\n'
            'Content: In such cases, it can be essential to overcharge your NiMH battery sometimes to ensure they '
            'are fully charged and operate optimally. However, ...\n'
            'Link: https://www.eblofficial.com/blogs/blog/how-to-revive-nimh-battery\n\nSearch result 6\n'
            'Title: How Long Should You Drive to Charge Your Car Battery?\n'
            'Content: Discover how long you should drive to charge your car battery effectively. Learn tips, '
            'calculations, and alternative methods. Drive smart, charge smart!\n'
            'Link: https://heartautocare.com/how-long-should-you-drive-to-charge-your-car-battery/\n\n'
            'Search result 7\nTitle: BU-502: Discharging at High and Low Temperatures\n'
            'Content: Like humans, batteries function best at room temperature. Warming a dying battery in a mobile '
            'phone or flashlight in our jeans might provide ...\n'
            'Link: https://batteryuniversity.com/article/bu-502-discharging-at-high-and-low-temperatures\n\n'
            'Search result 8\nTitle: Can You Recharge A Completely Dead Car Battery?\n'
            'Content: Learn the signs of a dead battery, whether you can recharge a completely dead car battery and '
            'other method to safely revive it.\n'
            'Link: https://carfromjapan.com/article/car-maintenance/can-you-recharge-a-completely-dead-car-battery/\n'
            "\nSearch result 9\nTitle: How to Fix a Dead Car Battery - Naylor's Auto Repair\n"
            'Content: It indicates that the battery is leaking. This will tell that your battery will not function '
            'as it should.\nLink: https://www.naylorsautorepairidaho.com/blog/how-fix-dead-car-battery\n\n'
            'Search result 10\nTitle: The Truth About Reviving Dead Batteries - U.S. Battery Mfg. Co.\n'
            'Content: The batteries may or may not recover after one desulfation charge. If not, it may require '
            'several cycles of discharge and recharge with ...\n'
            'Link: https://www.usbattery.com/the-truth-about-reviving-dead-batteries/'
        ),
        'Inconclusive.',
    ),
    (
        'Sarah and James were shot execution-style in the living room.',
        (
            'Search result 1\nTitle: By Taufik | There were string of armed robberies and free murders ...\n'
            'Content: handgun been in the execution-style murder but we ... quickly cleared the living room, went '
            '...\n'
            'Link: '
            'https://www.facebook.com/Haru6789.cv/videos/watch-killer-siblings-season-3-episode-5-allridges/411826944'
            "038089/\n\nSearch result 2\nTitle: Why are Austin's Yogurt Shop Murders Still Unsolved After 30 Years?\n"
            'Content: Thomas, Ayers, and Jennifer and Sarah Harbinson were all shot and killed execution-style with '
            'a single gunshot wound to the back of their heads.\n'
            'Link: https://www.oxygen.com/crime-news/yogurt-shop-murders-austin-solved-theories-dna-update\n\n'
            "Search result 3\nTitle: Jenean Chapman's neighbors say they heard former aide to Sarah ...\n"
            "Content: Neighbors revealed they heard 'screaming fights' between Sarah Ferguson's ex-assistant and her "
            'husband, James Patrick, who has been arrested ...\n'
            'Link: '
            'https://www.dailymail.co.uk/news/article-12582157/Neighbors-Sarah-Ferguson-fights-James-Patrick-Jenean-C'
            'hapman-Dallas-Texas.html\n\nSearch result 4\nTitle: Sarah Brady, gun control advocate and widow of '
            'James Brady, dies ...\nContent: Sarah Brady, gun control advocate and widow of James Brady, dies at 73 '
            '... After the 1981 assassination attempt on President Ronald Reagan, nearly ...\n'
            'Link: https://www.latimes.com/local/obituaries/la-me-sarah-brady-20150403-story.html\n\n'
            'Search result 5\nTitle: Slayings of 3 Youths Stun Little Rock - The New York Times\n'
            'Content: When three armed men invaded the home of Mary Hussian here this month and killed three of her '
            'children, execution-style, this city, ...\n'
            'Link: https://www.nytimes.com/1995/06/27/us/slayings-of-3-youths-stun-little-rock.html\n\n'
            'Search result 6\nTitle: Revenge Is Motive in 7 Bronx Slayings, Police Say - The New York ...\n'
            "Content: Valentine's Day, they said, when three adults and three teen-agers were lined up on the "
            'living-room floor of a Bronx apartment and each shot in ...\n'
            'Link: '
            'https://www.nytimes.com/1993/02/26/nyregion/revenge-is-motive-in-7-bronx-slayings-police-say.html\n\n'
            'Search result 7\nTitle: 20 years later, triple murder casts a shadow over Christmas ...\n'
            'Content: The grisly, Christmas Day discovery of a Jean Wholaver and her two daughters shot dead '
            'execution-style by their ex-husband and father, Ernest ...\n'
            'Link: '
            'https://www.pennlive.com/crime/2022/12/20-years-later-triple-murder-casts-a-shadow-over-christmas-memori'
            'es-in-middletown.html\n\nSearch result 8\nTitle: Murder victims identified after police say they were '
            "shot 'execution ...\nContent: Murder victims identified after police say they were shot 'execution "
            "style'. 7.6K views · 1 ...\nLink: https://www.youtube.com/watch?v=ux9L1NLm-BI\n\nSearch result 9\n"
            'Title: Bonus – the James Bigby murders - what was that like\n'
            'Content: The former auto mechanic is accused of shooting three former coworkers and strangling a '
            '4-month-old baby. We have more in this NBC report. The 4 ...\n'
            'Link: https://whatwasthatlike.com/2023/04/14/bonus-the-james-bigby-murders/\n\nSearch result 10\n'
            "Title: Man arrested over 'execution-style' killings in Philadelphia park\n"
            'Content: A man has been arrested over the "execution-style" killings of a man and woman in a '
            'Philadelphia park. The bodies of Thurston Cooper, 49, ...\n'
            'Link: '
            'https://www.irishstar.com/news/pennsylvania-news/execution-style-killings-philadelphia-park-32278732'
        ),
        'Inconclusive.',
    ),
    (
        'Vikings used their longships to transport livestock.',
        (
            'Search result 1\nTitle: How did the Vikings transport animals on their ships? - Quora\n'
            'Content: The Vikings transported horses overseas in boats very similar to Viking longships, but with '
            'flat flooring built within the hulls, which allowed ...\n'
            'Link: https://www.quora.com/How-did-the-Vikings-transport-animals-on-their-ships\n\nSearch result 2\n'
            'Title: The Truth Behind Vikings Ships\nContent: They could land on any beach, permitting '
            'lightning-quick embarking and attacks. Great loads could be carried, including horses and livestock.\n'
            'Link: https://www.vikings.com/news/the-truth-behind-vikings-ships-18274806\n\nSearch result 3\n'
            'Title: Viking ships | Royal Museums Greenwich\nContent: Cargo vessels were used to carry trade goods '
            'and possessions. They were wider than the longships and travelled more slowly.\n'
            'Link: https://www.rmg.co.uk/stories/topics/viking-ships\n\nSearch result 4\n'
            'Title: How did the vikings bring the horses to Iceland? - Reddit\n'
            "Content: This was stored in casks and skins. It's worth mentioning that some discomfort for these "
            "animals was expected, and they may have been 'rationed' ...\n"
            'Link: '
            'https://www.reddit.com/r/AskHistorians/comments/5l05tj/how_did_the_vikings_bring_the_horses_to_iceland/'
            '\n\nSearch result 5\nTitle: Did the Vikings bring livestock on their raids and voyages?\n'
            'Content: The Vikings did not generally transport livestock during their raids. Viking longships did not '
            'have substantial cargo room. As a result, the Vikings only ...\n'
            'Link: '
            'https://homework.study.com/explanation/did-the-vikings-bring-livestock-on-their-raids-and-voyages.html\n'
            '\nSearch result 6\nTitle: LEVS : Viking FAQs : Transportation\n'
            'Content: The upper deck was used for humans and their space, and the lower decks were used for '
            'livestock, furniture, and other goods that were being transported from ...\n'
            'Link: http://vikingship.org/ourfaqs/transportation_1.html\n\nSearch result 7\n'
            'Title: Viking Ships - World History Encyclopedia\nContent: Such ships gave the Vikings the ability to '
            'trade, make war, carry animals ... Longships, on the other hand, used both oars and sails to reach ...\n'
            'Link: https://www.worldhistory.org/Viking_Ships/\n\nSearch result 8\n'
            'Title: The Viking Longship - Warfare History Network\nContent: Longships enabled the Vikings to '
            'transport their armies throughout Europe and conduct amphibious assaults in estuaries and navigable '
            'rivers.\nLink: https://warfarehistorynetwork.com/article/the-viking-longship/\n\nSearch result 9\n'
            'Title: Viking Ships | Regia Anglorum\nContent: Most Viking trading boats were able to come ashore '
            'without the need of complicated harbour facilities, and yet carry many tons of cargo. This encouraged '
            '...\nLink: https://regia.org/research/ships/Ships0.htm'
        ),
        'Contradicted.',
    ),
    (
        'Romário has scored a total of 92 international goals.',
        (
            'Search result 1\nTitle: Romário - Wikipedia\nContent: A prolific striker renowned for his clinical '
            'finishing, he scored over 700 goals and is one of the few players to score at least 100 goals for three '
            'clubs. He ...\nLink: https://en.wikipedia.org/wiki/Rom%C3%A1rio\n\nSearch result 2\n'
            'Title: Romário de Souza Faria - Goals in International Matches - RSSSF\n'
            'Content: The outstanding Brazilian player, who scored 55 international goals for his National Team, has '
            '... 92 Paris France 2-0 27 10 16/12/92 Porto ...\n'
            'Link: https://www.rsssf.org/miscellaneous/romario-intlg.html\n\nSearch result 3\n'
            'Title: In 92 Romário said:" I didn\'t come from Europe for a friendly in Brazil ...\n'
            'Content: he played till he was like 42, scored 772 goals in official games in his career (the same '
            'average as messi and higher than ronaldo) and won a ...\n'
            'Link: '
            'https://www.reddit.com/r/soccer/comments/7klck5/in_92_rom%C3%A1rio_said_i_didnt_come_from_europe_for_a/'
            '\n\nSearch result 4\nTitle: Romário - National team - Transfermarkt\n'
            'Content: Only games with goals scored. Compact · Detailed. Matchday, Date, Match, Pos. International '
            'Friendlies. 5/23/87, Republic of Ireland · 1:0 ...\n'
            'Link: https://www.transfermarkt.us/romario/nationalmannschaft/spieler/7942\n\nSearch result 5\n'
            "Title: List of men's footballers with 50 or more international goals - Wikipedia\n"
            'Content: Cristiano Ronaldo holds the all-time record with 128 goals. Brazil and Hungary hold the record '
            'of having the most players to have scored 50 or more ...\n'
            'Link: https://en.wikipedia.org/wiki/List_of_men%27s_footballers_with_50_or_more_international_goals\n\n'
            'Search result 6\nTitle: romário de souza faria - Romàrio - FC Barcelona Players\n'
            'Content: According to recent studies, he is the highest goal scorer in world football, with 768 goals '
            'in official matches for club and national team, ahead of Bican, ...\n'
            'Link: https://players.fcbarcelona.com/en/player/759-romario-romario-souza-faria\n\nSearch result 7\n'
            'Title: Romario is the best striker ever imo | BigSoccer Forum\n'
            "Content: * Dutch league's top scorer: 1989, 1990, 1991, 1992 ... romario has scored 55 goals , thats "
            'about 34 % of ... in 1994 world cup, in brazil games was scored a total ...\n'
            'Link: https://www.bigsoccer.com/threads/romario-is-the-best-striker-ever-imo.597679/\n\n'
            'Search result 8\nTitle: Romario: The Art of Goal-Scoring Brilliance. - LinkedIn\n'
            'Content: In 1997 alone, the duo scored an impressive total of 34 international goals with 19 coming '
            'from Romário. The Ro-Ro attack was expected to ...\n'
            'Link: https://www.linkedin.com/pulse/romario-art-goal-scoring-brilliance-javad-ghorbani\n\n'
            "Search result 9\nTitle: Who is Brazil's leading all-time top goal scorer? Pele, Neymar ...\n"
            'Content: The three-time World Cup winner went on to score a total of 77 goals in 92 games for the '
            'Selecao at an astonishing 0.84 goals-per-game ratio.\n'
            'Link: '
            'https://www.goal.com/en-us/lists/pele-neymar-ronaldo-who-is-brazils-leading-all-time-top-goalscorers/blt'
            '75e4aa20fd6a2bed\n\nSearch result 10\nTitle: Romário - All goals - Transfermarkt\n'
            'Content: This overview shows all goals scored by the selected player, including the results of the '
            'games. It is also possible to select a competition. Filter by season:.\n'
            'Link: https://www.transfermarkt.us/romario/alletore/spieler/7942'
        ),
        'Contradicted.',
    ),
    (
        'Utopia portrays a society that values education and learning.',
        (
            'Search result 1\nTitle: Utopia Education, Science, Philosophy Summary & Analysis\n'
            'Content: The Utopians believe that it is through education that the values and dispositions of citizens '
            'are molded. The success of the Utopian educational system is ...\n'
            'Link: https://www.sparknotes.com/philosophy/utopia/section10/\n\nSearch result 2\n'
            'Title: Utopianism and Education: The Legacy of Thomas More - jstor\n'
            'Content: Utopia, are filled from this sector of society. ... fail to find significance and meaning in '
            'classroom learning. ... closed, value positions about education - about ...\n'
            'Link: https://www.jstor.org/stable/3122242\n\nSearch result 3\n'
            "Title: [PDF] education in thomas more's utopia - DergiPark\nContent: This work of art depicts an ideal "
            'society and in doing so relays many qualities desirable in an educational system. This study aims to '
            "explore Thomas More's ...\nLink: https://dergipark.org.tr/tr/download/article-file/55667\n\n"
            "Search result 4\nTitle: Society and Government in Thomas More's “Utopia” - Medium\n"
            "Content: The utopian society portrayed in More's book employs enslaved people for animal slaughter and "
            'heavy labour. However, the discussion of slavery ...\n'
            'Link: '
            'https://medium.com/@batuhankarakus95/society-and-government-in-thomas-mores-utopia-a-focus-on-values-and'
            '-functioning-d9626aeaee71\n\nSearch result 5\nTitle: Utopia by Thomas More | Summary, Characters & '
            'Themes - Study.com\nContent: According to Thomas More, Utopian society is based on rational thought, '
            'communal property, productivity, no class distinctions or poverty, little crime or ...\n'
            'Link: https://study.com/academy/lesson/utopia-by-thomas-more-summary-analysis-quiz.html\n\n'
            "Search result 6\nTitle: Thomas More's Utopian Education | Inside Classical Education\n"
            'Content: We keep hearing of Utopian visions of culture and society, and I have been itching to go to '
            "the sources the word and the concept. More's book ...\n"
            'Link: https://insideclassicaled.com/thomas-mores-utopian-education/\n\nSearch result 7\n'
            'Title: About Utopia and Utopian Literature - Cliffs Notes\nContent: Throughout the society, life is '
            'directed by a highly moral code of conduct. An educational system for the intelligentsia is elaborately '
            'and idealistically ...\n'
            'Link: '
            'https://www.cliffsnotes.com/literature/u/utopia-utopian-literature/about-utopia-and-utopian-literature\n'
            '\nSearch result 8\nTitle: Full article: Educational Studies and the Domestication of Utopia\n'
            "Content: Utopia depicts an entire functioning society. Utopian visions 'are explicitly holistic, "
            'imaginary, critical, normative, prescriptive ...\n'
            'Link: https://www.tandfonline.com/doi/full/10.1080/00071005.2016.1143085\n\nSearch result 9\n'
            'Title: Utopian Society | Definition, Ideas & Examples - Lesson - Study.com\n'
            "Content: The idea behind utopianism is a society in which everyone's needs are met and society's ills "
            'have been defeated. Because this is an extremely tall order, ...\n'
            'Link: https://study.com/academy/lesson/characteristics-of-a-utopian-society.html\n\nSearch result 10\n'
            'Title: Education and Utopia: Robert Owen and Charles Fourier - Jstor\n'
            'Content: into the community—his ideal society contains no schools and no teachers. ... (Universities '
            'are not mentioned in A new view of society, but are later portrayed as ...\n'
            'Link: https://www.jstor.org/stable/23119459'
        ),
        'Supported.',
    ),
    (
        (
            'The higher density of water can cause sound waves to be reflected or refracted differently.'
        ),
        (
            'Search result 1\nTitle: How does sound in air differ from sound in water?\n'
            'Content: Sounds in water and sounds in air that have the same pressures have very different intensities '
            'because the density of water is much greater than ...\n'
            'Link: https://dosits.org/science/sounds-in-the-sea/how-does-sound-in-air-differ-from-sound-in-water/\n\n'
            'Search result 2\nTitle: When a sound wave passes from air into water, what properties of ...\n'
            'Content: Sound travels faster in water than in air because the density of water is higher. The exact '
            'speed depends on the temperature, pressure, and ...\n'
            'Link: '
            'https://www.quora.com/When-a-sound-wave-passes-from-air-into-water-what-properties-of-the-wave-will-chan'
            'ge-1\n\nSearch result 3\nTitle: Reflection, Refraction, and Diffraction - The Physics Classroom\n'
            'Content: Sound waves travel slower in cooler air than they do in warmer air. For this reason, the '
            'portion of the wavefront directly above the water is slowed down, while ...\n'
            'Link: https://www.physicsclassroom.com/class/sound/Lesson-3/Reflection,-Refraction,-and-Diffraction\n\n'
            'Search result 4\nTitle: Refraction of Sound Waves - Graduate Program in Acoustics\n'
            'Content: When a wave encounters different medium where the wave speed is different, the wave will '
            'change directions. Most often refraction is encountered in a study ...\n'
            'Link: https://www.acs.psu.edu/drussell/demos/refract/refract.html\n\nSearch result 5\n'
            'Title: Refraction of light - Science Learning Hub\nContent: When light travels from air into water, it '
            'slows down, causing it to change direction slightly. This change of direction is called refraction.\n'
            'Link: https://www.sciencelearn.org.nz/resources/49-refraction-of-light\n\nSearch result 6\n'
            'Title: How is sound refracted going from a less dense media to a denser ...\n'
            'Content: Refraction is the property of a wave to bend as it propagates through different media. The '
            'changes in the media makes one side of the wave slow down or speed up ...\n'
            'Link: '
            'https://homework.study.com/explanation/how-is-sound-refracted-going-from-a-less-dense-media-to-a-denser-'
            'media.html\n\nSearch result 7\nTitle: Reflection, Refraction, and Diffraction - The Physics Classroom\n'
            'Content: Diffraction of water waves is observed in a harbor as waves bend around small boats and are '
            'found to disturb the water behind them. The same waves however are ...\n'
            'Link: https://www.physicsclassroom.com/class/waves/Lesson-3/Reflection,-Refraction,-and-Diffraction\n\n'
            'Search result 8\nTitle: What happens to a sound wave as it travels from air into water? (a ...\n'
            'Content: The sound intensity in the water will be less than it was in air because some sound is '
            'reflected by the water surface. However, the frequency ( ...\n'
            'Link: '
            'https://www.toppr.com/ask/question/what-happens-to-a-sound-wave-as-it-travels-from-air-into-water-a-its/'
            '\n\nSearch result 9\nTitle: Ultrasound Physics and Instrumentation - StatPearls - NCBI Bookshelf\n'
            'Content: The difference in structure density promotes the refraction or bending of sound waves off the '
            'surface. The result is that echoes do not return ...\n'
            'Link: https://www.ncbi.nlm.nih.gov/books/NBK570593/\n\nSearch result 10\n'
            'Title: How does sound propagate from air into water?\nContent: A portion of the sound wave will reflect '
            'away from the water and into the air, while another part will transmit into the water. During ...\n'
            'Link: https://dosits.org/science/movement/how-does-sound-propagate-from-air-into-water/'
        ),
        'Supported.',
    ),
    (
        'Mount Katahdin is 6,288.2 feet (1,917.6 meters) tall.',
        (
            'Search result 1\nTitle: Mount Katahdin - Wikipedia\nContent: Mount Katahdin is the highest mountain in '
            'the U.S. state of Maine at 5,269 feet (1,606 m). Named Katahdin, which means "Great Mountain", by the '
            'Penobscot ...\nLink: https://en.wikipedia.org/wiki/Mount_Katahdin\n\nSearch result 2\n'
            'Title: Mount Katahdin - Baxter State Park (U.S. National Park Service)\n'
            'Content: Katahdin, which translates to "Greatest Mountain" in Penobscot, is the highest mountain in the '
            'state of Maine at 5,269 feet.\nLink: https://www.nps.gov/places/katahdin-baxter-state-park.htm\n\n'
            'Search result 3\nTitle: Mount Katahdin | Maine, Map, & Facts | Britannica\n'
            'Content: Mount Katahdin, highest point (5268 feet [1606 metres]) in Maine, U.S. It lies in Baxter State '
            'Park, 20 miles (32 km) northwest of Millinocket, ...\n'
            'Link: https://www.britannica.com/place/Mount-Katahdin\n\nSearch result 4\n'
            'Title: Mount Katahdin - Simple English Wikipedia, the free encyclopedia\n'
            'Content: It is 5,267 feet (1,605 m) tall. Mount Katahdin. Katahdin from 10,000 ft (3,000 m). Highest '
            'point. Elevation, 5,267 ft (1,605 m)NAVD 88 · Prominence, 4,288 ft ( ...\n'
            'Link: https://simple.wikipedia.org/wiki/Mount_Katahdin\n\nSearch result 5\n'
            'Title: Mount Katahdin- The Beginning - Alt Route Meals\nContent: It is the states highest peak standing '
            'at 5,269ft tall. This is the Northern Terminus of the Appalachian Trail, a 2,189 mile footpath that '
            '...\nLink: https://altroutemeals.com/blogs/news/thai-curry-maine-katahdin-millinocket\n\n'
            'Search result 6\nTitle: Mount Katahdin - PeakVisor\nContent: Mount Katahdin is the highest mountain in '
            'the U.S. state of Maine at 5,267 feet (1,605 m). Named Katahdin by the Penobscot Indians, which means '
            '"The ...\nLink: https://peakvisor.com/peak/mount-katahdin.html\n\nSearch result 7\n'
            'Title: Katahdin, Maine - Peakbagger.com\nContent: Elevation: 5268 feet, 1606 meters ; Highest Summit, '
            'Baxter Peak ; Subpeaks, Katahdin - South Peak (5260 ft/1603 m) Pamola Peak (4919 ft/1499 m) Chimney '
            'Peak (4900 ...\nLink: https://peakbagger.com/Peak.aspx?pid=6820\n\nSearch result 8\n'
            'Title: Summit to Mt. Katahdin - Tallest Peak in Maine. - YouTube\n'
            'Content: In 1989, I attempted to summit Mt. Katahdin as a Boy Scout while attending a High Adventure '
            '...\nLink: https://www.youtube.com/watch?v=t-bT2clu57o'
        ),
        'Contradicted.',
    ),
)
